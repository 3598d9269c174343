package testsupport

import (
	"os"
	"os/exec"
	"testing"
)

// Chromium finds a Chromium for the browser tests. Without one the test
// skips, except under CI=true, where it fails: CI installs it.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is missing under CI=true; install it with: apt-get install -y chromium")
	}
	t.Skip("browser tests skipped: chromium not found (apt-get install -y chromium)")
	return ""
}

// Artifacts is where a browser test's screenshots go: $HARN_ARTIFACTS, or
// the test's temporary directory.
func Artifacts(t testing.TB) string {
	t.Helper()
	d := os.Getenv("HARN_ARTIFACTS")
	if d == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}
