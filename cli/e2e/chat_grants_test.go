package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// TestChatFollowUpsKeepTheSessionsGrants: in `harn chat --profile edit`,
// "create a hello file" twice writes twice: the second prompt is a
// follow-up that names no grants, and holds the session's. /pin and
// /compact reach the node and say what it did.
func TestChatFollowUpsKeepTheSessionsGrants(t *testing.T) {
	e := askEnv(t)
	wd := t.TempDir()
	hello := filepath.Join(wd, "hello.txt")
	// a long comment in the file: the exchanges are worth compacting
	long := strings.Repeat("the quick brown fox jumps over the lazy dog ", 40)
	m := modeltest.New(t,
		calls(call("w1", "write", `{"path":"hello.txt","content":"hello one"}`)), modeltest.Text("created hello.txt"),
		calls(call("w2", "write", `{"path":"hello.txt","content":"hello two\n`+long+`"}`)), modeltest.Text("created it again"))
	p := startChat(t, e.root, "grants", wd, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"),
		"chat", "--provider-url", m.URL(), "--model", "test-model", "--profile", "edit")
	p.waitScreen("the TUI is up", "Enter steer")
	p.typeLine("create a hello file", "Enter")
	p.waitScreen("the first turn ended", "created hello.txt")
	eventually(t, stateTimeout, "the first write", func() (bool, string) {
		b, _ := os.ReadFile(hello)
		return string(b) == "hello one", string(b)
	})
	p.waitScreen("the first turn's end line", " succeeded ──")
	p.typeLine("create a hello file", "Enter")
	s := p.waitScreen("the second turn ended", "created it again")
	eventually(t, stateTimeout, "the second write, under the session's grants", func() (bool, string) {
		b, _ := os.ReadFile(hello)
		return strings.HasPrefix(string(b), "hello two\n"), string(b) + "\n" + p.screen()
	})
	if strings.Contains(s, "refused") || strings.Contains(s, "needs execute") {
		t.Fatalf("a call was refused:\n%s", s)
	}
	p.typeLine("/pin the build is make", "Enter")
	p.waitScreen("/pin answered", "pinned into session")
	p.typeLine("/compact", "Enter")
	p.waitScreen("/compact answered", "compacted session")
}
