package main

import (
	"runtime/debug"
	"strings"
)

// version is the binary's version: set with -ldflags "-X main.version=…"
// for a release, else taken from the build info (init below).
var version = ""

func init() {
	if version == "" {
		info, _ := debug.ReadBuildInfo()
		version = buildVersion(info)
	}
}

// buildVersion says which code a binary was built from, from the
// information the go command stamps into it: the module version ("devel"
// for a build in a checkout), the VCS revision (12 hex digits) and whether
// the work tree had uncommitted changes. "devel" alone when there is none
// (a build outside version control, or -buildvcs=false).
func buildVersion(info *debug.BuildInfo) string {
	if info == nil {
		return "devel"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev string
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	// A module version from a pseudo-version already names the revision.
	if rev == "" || strings.Contains(v, rev[:min(12, len(rev))]) {
		return v
	}
	v += " (revision " + rev[:min(12, len(rev))]
	if modified {
		v += ", modified"
	}
	return v + ")"
}
