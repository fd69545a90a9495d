package eventcore

import (
	"errors"
	"testing"
)

// OpenCode's session ids (the real 1.18.33's, from its plugin's
// chat.message) pass; near misses that a launch line would carry do not.
func TestValidSessionIDTakesOpenCodes(t *testing.T) {
	if err := ValidSessionID("ses_dc293dbceffeDlWRXugk2lL97T"); err != nil {
		t.Errorf("an OpenCode session id: %v", err)
	}
	for _, bad := range []string{"ses_", "ses_dc293dbceffeDlWRXugk2lL97", "ses_dc293dbceffeDlWRXugk2lL97T1",
		"ses_dc293dbceffeDlWRXugk2l 97T", "ses_dc293dbceffeDlWRXugk2l;97T", "SES_dc293dbceffeDlWRXugk2lL97T", "msg_23d6c2462001v8NP52CSpMPsHb"} {
		if err := ValidSessionID(bad); !errors.Is(err, ErrSessionID) {
			t.Errorf("ValidSessionID(%q) = %v, want ErrSessionID", bad, err)
		}
	}
}
