package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	checkout := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/laxity-dev/laxity", Version: "(devel)"},
		Settings:  []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}},
	}
	dirty := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Version: "(devel)"},
		Settings:  []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}},
	}
	installed := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.4.0"}}
	for _, tc := range []struct {
		name              string
		version, revision string
		build             *debug.BuildInfo
		want              Info
	}{
		{"set when linking", "v0.3.0", "feedbeef", checkout, Info{"v0.3.0", "feedbeef", "go1.26.0"}},
		{"a build in a checkout", "dev", "", checkout, Info{"dev", "abc123", "go1.26.0"}},
		{"uncommitted changes", "dev", "", dirty, Info{"dev", "abc123-dirty", "go1.26.0"}},
		{"go install module@version", "dev", "", installed, Info{"v0.4.0", "", "go1.26.1"}},
		{"no build information", "dev", "", nil, Info{"dev", "", runtime.Version()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuild(tc.version, tc.revision, tc.build); got != tc.want {
				t.Errorf("fromBuild = %+v, want %+v", got, tc.want)
			}
		})
	}
}
