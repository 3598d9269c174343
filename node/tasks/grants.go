package tasks

import "github.com/harn-dev/harn/runtime"

// Grant is a task's grant (runtime.Grant), for the command line.
type Grant = runtime.Grant

// Profile returns a named grant profile: read-only, edit or full.
func Profile(name string) ([]Grant, error) { return runtime.Profile(name) }

// ParseGrants reads a grants file (`--grants FILE`); see runtime.ParseGrants.
func ParseGrants(b []byte) ([]Grant, error) { return runtime.ParseGrants(b) }

// FormatGrants writes grants in the grants file's line form.
func FormatGrants(gs []Grant) []byte { return runtime.FormatGrants(gs) }

// MaxGrantsFileBytes bounds a grants file.
const MaxGrantsFileBytes = runtime.MaxGrantsFileBytes
