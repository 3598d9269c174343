package tasks

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
)

// lastContent is the content of a request's last message, as sent.
func lastContent(req map[string]any) string {
	ms, _ := req["messages"].([]any)
	if len(ms) == 0 {
		return ""
	}
	m, _ := ms[len(ms)-1].(map[string]any)
	c, _ := m["content"].(string)
	return c
}

var (
	refRE    = regexp.MustCompile(`"ref":"(out-[0-9a-f]+)"`)
	offsetRE = regexp.MustCompile(`ask for offset (\d+) for more\]$`)
)

// TestAHundredThousandByteShellOutputIsRecallableByteForByte: a shell
// output over the toolbox's old 32 KiB cut is stored whole; the model sees
// a bounded preview and its reference, and recall, piece after piece,
// gives back every one of its 100,001 bytes, as the requests the model
// server received carry them.
func TestAHundredThousandByteShellOutputIsRecallableByteForByte(t *testing.T) {
	h, err := New(Config{Node: "n1", KV: &memKV{}, Key: bytes.Repeat([]byte{7}, 32), Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	want := strings.Repeat("0123456789abcdef\n", 100_001/17+1)[:100_001]
	srv := modeltest.New(t, modeltest.Calls(true, modeltest.Call{ID: "s1", Name: "shell",
		Args: `{"command":"yes 0123456789abcdef | head -c 100001"}`}))
	var (
		mu      sync.Mutex
		got     strings.Builder
		preview string
		fail    string
		n       int
	)
	srv.SetFallback(func(req map[string]any) modeltest.Reply {
		mu.Lock()
		defer mu.Unlock()
		n++
		c := lastContent(req)
		ref := ""
		if n == 1 { // the shell's result: its preview
			preview = c
			m := refRE.FindStringSubmatch(c)
			if m == nil {
				fail = "the shell's result names no reference: " + c[:min(len(c), 200)]
				return modeltest.Text("done")
			}
			ref = m[1]
			return modeltest.Calls(true, modeltest.Call{ID: "r1", Name: "recall", Args: `{"ref":"` + ref + `"}`})
		}
		body, _, more := strings.Cut(c, "\n[recall:")
		got.WriteString(body)
		m := offsetRE.FindStringSubmatch(c)
		if !more || m == nil || n > 500 {
			return modeltest.Text("done")
		}
		ref = refRE.FindStringSubmatch(preview)[1]
		off, _ := strconv.Atoi(m[1])
		return modeltest.Calls(true, modeltest.Call{ID: fmt.Sprintf("r%d", n), Name: "recall",
			Args: fmt.Sprintf(`{"ref":%q,"offset":%d}`, ref, off)})
	})
	id, err := h.OpenHarn(HarnOptions{URL: srv.URL(), Model: "test-model", Key: "k", ContextWindow: 1_000_000, MaxOutput: 4096}, t.TempDir()) // no compaction
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.rt.Start(id, runtime.Request{Text: "print it", Grants: []runtime.Grant{{Level: runtime.Execute, Capability: "*"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskDone(t, h, v.ID)
	mu.Lock()
	defer mu.Unlock()
	if fail != "" {
		t.Fatal(fail)
	}
	if lim := h.cfg.Bounds.Norm().ToolPreviewBytes; len(preview) > lim+512 || strings.Contains(preview, "output cut") {
		t.Fatalf("the model saw %d bytes of the shell's output (preview %d): %q", len(preview), lim, preview[:min(len(preview), 300)])
	}
	if got.String() != want {
		t.Fatalf("recalled %d bytes, want the output's %d byte for byte", got.Len(), len(want))
	}
}
