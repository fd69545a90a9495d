package leadkit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/leadkit"
	"github.com/fleetd/fleetd/leadshim"
)

// The charter lists a running fleetd's roles but the lead's; without an
// answer, the defaults, and the summary says which.
func TestRolesComeFromFleetdElseTheDefaults(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode([]leadshim.RoleState{{Name: "lead"}, {Name: "w-a"}})
	}))
	defer srv.Close()
	roles, source := leadkit.Roles(context.Background(), leadshim.NewClient(srv.URL, ""), srv.URL)
	if len(roles) != 1 || roles[0].Name != "w-a" || source != "from fleetd at "+srv.URL {
		t.Errorf("Roles = %+v, %q", roles, source)
	}
	srv.Close()
	roles, source = leadkit.Roles(context.Background(), leadshim.NewClient(srv.URL, ""), srv.URL)
	if len(roles) != len(leadkit.DefaultRoles) || !strings.Contains(source, "did not answer") {
		t.Errorf("Roles of a fleetd gone = %+v, %q", roles, source)
	}
}

func TestSummarySaysWhatWasWrittenAndAboutTheToken(t *testing.T) {
	in := leadkit.Installed{ClaudeMD: "/p/CLAUDE.md", Command: "/p/.claude/commands/delegate.md", MCP: "/p/.mcp.json", Replaced: true}
	var out strings.Builder
	in.Summary(&out, leadkit.Kit{Exe: "fleetd", Flags: []string{"--url", "http://h:1"}, Agent: "lead", Token: true}, "/p", "from fleetd at http://h:1")
	for _, want := range []string{"replaced the team charter in /p/CLAUDE.md (roles from fleetd at http://h:1)",
		"'fleetd --url http://h:1 mcp' as agent lead", "Start the lead's Claude Code in /p", "export FLEET_TOKEN"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestURLFlagsOnlyOffTheDefaultAddress(t *testing.T) {
	for url, want := range map[string]string{"http://" + leadshim.DefaultAddr: "", "http://" + leadshim.DefaultAddr + "/": "", "": "",
		"http://h:1/": "--url http://h:1"} {
		if got := strings.Join(leadkit.URLFlags(url), " "); got != want {
			t.Errorf("URLFlags(%q) = %q, want %q", url, got, want)
		}
	}
}
