// Package version says which build of laxity is running: its release
// version and source revision, set when the binary is linked or else read
// from the build information Go embeds in every binary.
//
// A release build sets both at link time:
//
//	go build -ldflags "-X github.com/laxity-dev/laxity/internal/version.Version=v0.4.0 \
//	  -X github.com/laxity-dev/laxity/internal/version.Revision=$(git rev-parse HEAD)"
//
// Without them, a binary built with go install module@version reports that
// version, and one built in a git checkout reports the commit it was built
// from (with "-dirty" when the work tree had changes).
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release version, set at link time; see the package doc.
var Version = ""

// Revision is the source commit, set at link time; see the package doc.
var Revision = ""

// Unknown is what Info holds for what neither the link nor the build
// information says.
const Unknown = "unknown"

// Info is the identity of a build.
type Info struct {
	// Version is the release version, such as v0.4.0.
	Version string
	// Revision is the source commit the binary was built from.
	Revision string
	// GoVersion is the Go toolchain that built it, such as go1.26.1.
	GoVersion string
}

// Get is this binary's Info.
func Get() Info {
	return from(Version, Revision, debug.ReadBuildInfo)
}

// from is the Info of a build linked with version and revision ("" when
// not set) whose build information read returns.
func from(version, revision string, read func() (*debug.BuildInfo, bool)) Info {
	out := Info{Version: version, Revision: revision, GoVersion: runtime.Version()}
	if info, ok := read(); ok && info != nil {
		if info.GoVersion != "" {
			out.GoVersion = info.GoVersion
		}
		// "(devel)" is what Go reports for a main module built from its
		// own checkout: no version at all.
		if out.Version == "" && info.Main.Version != "(devel)" {
			out.Version = info.Main.Version
		}
		if out.Revision == "" {
			out.Revision = vcsRevision(info.Settings)
		}
	}
	if out.Version == "" {
		out.Version = Unknown
	}
	if out.Revision == "" {
		out.Revision = Unknown
	}
	return out
}

// vcsRevision is the commit the build information records, "" when none.
func vcsRevision(settings []debug.BuildSetting) string {
	var revision string
	modified := false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision != "" && modified {
		revision += "-dirty"
	}
	return revision
}
