package version

import (
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFrom(t *testing.T) {
	built := func(version string, settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/laxity-dev/laxity", Version: version}, Settings: settings}, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	revision := debug.BuildSetting{Key: "vcs.revision", Value: "0123abcd"}
	for _, tc := range []struct {
		name              string
		version, revision string
		read              func() (*debug.BuildInfo, bool)
		want              Info
	}{
		{"linked: the link wins", "v0.4.0", "feedbeef", built("v0.3.0", revision),
			Info{Version: "v0.4.0", Revision: "feedbeef", GoVersion: "go1.26.1"}},
		{"go install module@version", "", "", built("v0.3.0"),
			Info{Version: "v0.3.0", Revision: Unknown, GoVersion: "go1.26.1"}},
		{"a build in a checkout", "", "", built("(devel)", revision),
			Info{Version: Unknown, Revision: "0123abcd", GoVersion: "go1.26.1"}},
		{"a build in a checkout with changes", "", "", built("(devel)", revision, debug.BuildSetting{Key: "vcs.modified", Value: "true"}),
			Info{Version: Unknown, Revision: "0123abcd-dirty", GoVersion: "go1.26.1"}},
	} {
		if diff := cmp.Diff(tc.want, from(tc.version, tc.revision, tc.read)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	got := from("", "", none)
	if got.Version != Unknown || got.Revision != Unknown || got.GoVersion == "" {
		t.Errorf("no build information: %+v, want unknown version and revision and this toolchain's Go version", got)
	}
}
