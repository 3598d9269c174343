package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// modelServer is an OpenAI-compatible chat-completions server speaking
// the SSE wire format, answering from a script.
type modelServer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	next []string // each: the SSE body of one answer
	reqs []string // the raw request bodies
	// hold, when set, makes a request past the script wait until it is
	// closed or the caller goes (a loop parked in a model call)
	hold chan struct{}
}

func newModelServer(t *testing.T, answers ...string) *modelServer {
	m := &modelServer{next: answers}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.reqs = append(m.reqs, string(b))
		if len(m.next) == 0 && m.hold != nil {
			m.mu.Unlock()
			select {
			case <-m.hold:
			case <-r.Context().Done():
			}
			http.Error(w, `{"error":{"message":"script exhausted"}}`, 500)
			return
		}
		if len(m.next) == 0 {
			m.mu.Unlock()
			http.Error(w, `{"error":{"message":"script exhausted"}}`, 500)
			return
		}
		a := m.next[0]
		m.next = m.next[1:]
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, a)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *modelServer) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.reqs...)
}

func sse(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		fmt.Fprintf(&b, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", c)
	}
	b.WriteString("data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":3,\"total_tokens\":14}}\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func sseText(s string) string {
	j, _ := json.Marshal(s)
	return sse(`{"role":"assistant","content":` + string(j) + `}`)
}

func sseCall(id, name, args string) string {
	j, _ := json.Marshal(args)
	return sse(`{"tool_calls":[{"index":0,"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + string(j) + `}}]}`)
}

// askEnv starts a node with a short grace period.
func askEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	n := e.spawn(append(append([]string(nil), e.base...), "HARN_TASK_GRACE=2s"), "node", "--data-dir", e.dataDir, "--socket", e.socket)
	e.waitReady(n)
	return e
}

func (e *env) askArgs(m *modelServer, extra ...string) []string {
	return append([]string{"ask", "--provider-url", m.srv.URL + "/v1", "--model", "test-model"}, extra...)
}

func grantsFile(t *testing.T, lines string) string {
	p := filepath.Join(t.TempDir(), "grants")
	if err := os.WriteFile(p, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAskReadsAFileThroughTheReadTool(t *testing.T) {
	e := askEnv(t)
	// The read tool is confined to the session's directory: ask runs there.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("the secret word is pelican"), 0o600)
	m := newModelServer(t, sseCall("c1", "read", `{"path":"hello.txt"}`), sseText("it says pelican"))
	r := runIn(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), dir, e.askArgs(m, "--grants", grantsFile(t, "execute read\n"), "the file?")...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "it says pelican" {
		t.Fatalf("%v", r)
	}
	if reqs := m.requests(); len(reqs) != 2 || !strings.Contains(reqs[1], "the secret word is pelican") {
		t.Fatalf("the read result did not reach the model: %v", reqs)
	}
	var ss []sessionJSON
	mustJSON(t, e.ok("agents", "list", "--all", "--json"), &ss)
	found := false
	for _, s := range ss {
		found = found || s.Agent == "harn"
	}
	if !found {
		t.Fatalf("no harn session in agents list: %+v", ss)
	}
}

func TestAskToolOutsideTheGrantsIsRefused(t *testing.T) {
	e := askEnv(t)
	m := newModelServer(t, sseCall("c1", "shell", `{"command":"touch `+filepath.Join(t.TempDir(), "x")+`"}`), sseText("could not"))
	r := run(t, append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), "", e.askArgs(m, "--grants", grantsFile(t, "execute read\n"), "touch it")...)
	reqs := m.requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1], "refused by harn") {
		t.Fatalf("shell was not refused: %v %v", r, reqs)
	}
}

// askJSON starts harn ask --json and returns its events as they come.
func askJSON(t *testing.T, e *env, args []string) (<-chan map[string]any, *exec.Cmd) {
	return askJSONIn(t, e, "", args)
}

// askJSONIn is askJSON run in dir (the session's working directory, to
// which the file tools are confined); "" is the test's own.
func askJSONIn(t *testing.T, e *env, dir string, args []string) (<-chan map[string]any, *exec.Cmd) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, harnBin, append(args, "--json")...)
	cmd.Env, cmd.Dir = append(e.hookEnv(), "HARN_PROVIDER_KEY=k"), dir
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Wait() })
	ch := make(chan map[string]any, 256)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				ch <- ev
			}
		}
	}()
	return ch, cmd
}

func waitFor(t *testing.T, ch <-chan map[string]any, typ string) map[string]any {
	t.Helper()
	deadline := time.After(45 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("ask ended before a %s event", typ)
			}
			if ev["type"] == typ {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event", typ)
		}
	}
}

func TestAskCancelStopsARunningShellWithinGrace(t *testing.T) {
	e := askEnv(t)
	m := newModelServer(t, sseCall("c1", "shell", `{"command":"sleep 60"}`))
	ch, _ := askJSON(t, e, e.askArgs(m, "--profile", "full", "sleep"))
	pre := waitFor(t, ch, "tool.pre")
	task := pre["task"].(string)
	e.ok("task", "cancel", task)
	post := waitFor(t, ch, "tool.post")
	if post["outcome"] != "aborted" {
		t.Fatalf("shell outcome %v", post)
	}
	if end := waitFor(t, ch, "turn.end"); end["status"] != "cancelled" {
		t.Fatalf("end %v", end)
	}
}

func TestAskConfirmationFlowsThroughTaskConfirm(t *testing.T) {
	e := askEnv(t)
	mark := filepath.Join(t.TempDir(), "made")
	m := newModelServer(t, sseCall("c1", "shell", `{"command":"touch `+mark+`"}`), sseText("made it"))
	ch, _ := askJSON(t, e, e.askArgs(m, "--grants", grantsFile(t, "execute shell confirm\n"), "make it"))
	req := waitFor(t, ch, "input.requested")
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the shell ran before its confirmation")
	}
	e.ok("task", "confirm", req["task"].(string), req["call"].(string))
	if end := waitFor(t, ch, "turn.end"); end["status"] != "succeeded" {
		t.Fatalf("end %v", end)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the confirmed shell did not run: %v", err)
	}
}
