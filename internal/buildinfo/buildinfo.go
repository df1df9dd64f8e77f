// Package buildinfo says which Fusebox this is: the version and commit set
// at build time (make build, the Dockerfile), else what the Go toolchain
// recorded of the checkout it built from.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// Set by the linker: -X github.com/fusebox/fusebox/internal/buildinfo.version=v1.2.3
// and .commit=<sha>.
var (
	version string
	commit  string
)

// Info is one build's identity.
type Info struct {
	Version   string // a tag such as v1.4.0, or "dev"
	Commit    string // the full commit, or "unknown"; "+dirty" when built from changed files
	GoVersion string
}

// Get returns this binary's Info (read once).
var Get = sync.OnceValue(read)

func read() Info {
	i := Info{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		if i.Commit == "" {
			i.Commit = vcs(bi.Settings)
		}
	}
	if i.Version == "" {
		i.Version = "dev"
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	return i
}

func vcs(settings []debug.BuildSetting) string {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "+dirty"
	}
	return rev
}

// String is the line `fusebox version` prints.
func (i Info) String() string {
	return "fusebox " + i.Version + " (commit " + i.Commit + ", " + i.GoVersion + ")"
}
