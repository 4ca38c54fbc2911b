package main

import "runtime/debug"

// buildVersion returns xmc's version and the commit it was built from, as
// the go command records it for a build inside a git checkout, so that a
// run summary says which build made it: "0.1.0-dev+5998e44d1f2a", with
// ".modified" where the checkout had uncommitted changes. A build without
// that record (outside git, or go build -buildvcs=false) gives the version
// alone.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	return versionWith(version, info.Settings)
}

// versionWith is buildVersion for a build of version base with the build
// settings settings.
func versionWith(base string, settings []debug.BuildSetting) string {
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
	if revision == "" {
		return base
	}
	v := base + "+" + revision[:min(12, len(revision))]
	if modified {
		v += ".modified"
	}
	return v
}
