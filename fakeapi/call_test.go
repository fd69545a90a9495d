package fakeapi

import "testing"

// The shape Claude Code 2.1.328 sent for a prompt that @-mentioned a file:
// the Read call and its numbered result as system reminders, then the
// prompt.
func TestAnAtMentionedFileIsAttachedAsTheModelSawIt(t *testing.T) {
	body := []byte(`{"model":"m","messages":[
	 {"role":"user","content":"earlier"},
	 {"role":"assistant","content":[{"type":"text","text":"ok"}]},
	 {"role":"user","content":"<system-reminder>\nCalled the Read tool with the following input: {\"file_path\":\"/w/.fleet/inbox/T1.md\"}\n</system-reminder>"},
	 {"role":"user","content":[
	  {"type":"text","text":"<system-reminder>\nResult of calling the Read tool:\n1\t/help me write the tests\n2\t\twith tabs  \n3\t\n</system-reminder>\n"},
	  {"type":"text","text":"Your prompt is in @/w/.fleet/inbox/T1.md"}]}]}`)
	c, err := parseCall(body)
	if err != nil {
		t.Fatal(err)
	}
	if c.Prompt != "Your prompt is in @/w/.fleet/inbox/T1.md" {
		t.Errorf("prompt %q", c.Prompt)
	}
	if len(c.Attached) != 1 {
		t.Fatalf("attached %+v, want one file", c.Attached)
	}
	if a := c.Attached[0]; a.Path != "/w/.fleet/inbox/T1.md" || a.Text != "/help me write the tests\n\twith tabs  \n" {
		t.Errorf("attached %+v", a)
	}
}
