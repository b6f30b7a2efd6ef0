// Package version says which laxity this is. Version and Revision are set
// when the binary is linked, for example
//
//	go build -ldflags "-X github.com/laxity-dev/laxity/internal/version.Version=v0.3.0 -X github.com/laxity-dev/laxity/internal/version.Revision=$(git rev-parse HEAD)"
//
// and otherwise come from what the Go toolchain recorded in the binary: the
// module version for `go install module@version`, the VCS revision for a
// build inside a git checkout.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release, such as "v0.3.0"; "dev" when the build did not
// set it.
var Version = "dev"

// Revision is the source revision (a git commit) the binary was built
// from; empty when unknown.
var Revision = ""

// Info is what a binary says about itself.
type Info struct {
	// Version is the release, or "dev".
	Version string `json:"version"`
	// Revision is the source revision, "" when unknown; with a "-dirty"
	// suffix when the checkout had uncommitted changes.
	Revision string `json:"revision"`
	// GoVersion is the Go release that built the binary.
	GoVersion string `json:"goVersion"`
}

// Get returns the version of the running binary: the values set at link
// time, each completed from the build information the toolchain embedded
// when it was not set.
func Get() Info {
	build, _ := debug.ReadBuildInfo()
	return fromBuild(Version, Revision, build)
}

// fromBuild fills what linking left unset from the build information,
// which may be nil (a binary built without module support).
func fromBuild(version, revision string, build *debug.BuildInfo) Info {
	info := Info{Version: version, Revision: revision, GoVersion: runtime.Version()}
	if build == nil {
		return info
	}
	if build.GoVersion != "" {
		info.GoVersion = build.GoVersion
	}
	// "(devel)" is what a build from a checkout records: no release.
	if info.Version == "dev" && build.Main.Version != "" && build.Main.Version != "(devel)" {
		info.Version = build.Main.Version
	}
	if info.Revision == "" {
		modified := false
		for _, s := range build.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if info.Revision != "" && modified {
			info.Revision += "-dirty"
		}
	}
	return info
}
