package main

import (
	"runtime/debug"
	"testing"
)

// TestBuildVersion: `drover --version` names the code it was built from
// (it said "dev" for every build).
func TestBuildVersion(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "devel"},
		{"a checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("710c6962bf9cd6886b638114b02fc4b143eea39e", "false")}, "devel (revision 710c6962bf9c)"},
		{"a dirty checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("710c6962bf9cd6886b638114b02fc4b143eea39e", "true")}, "devel (revision 710c6962bf9c, modified)"},
		{"go install of a release", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"go install of a pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261123202931-710c6962bf9c"}, Settings: vcs("710c6962bf9cd6886b638114b02fc4b143eea39e", "false")}, "v0.0.0-20261123202931-710c6962bf9c"},
		{"no version control", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		if have := buildVersion(tc.info); have != tc.want {
			t.Errorf("%s: want %q, have %q", tc.name, tc.want, have)
		}
	}
}
