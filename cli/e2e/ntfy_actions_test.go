package e2e

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ntfyMsg is one message an ntfy server received: its headers and body.
type ntfyMsg struct {
	header http.Header
	body   string
}

// ntfyAction is one of ntfy's http actions, as the Actions header's JSON
// names its fields.
type ntfyAction struct {
	Action  string            `json:"action"`
	Label   string            `json:"label"`
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Clear   bool              `json:"clear"`
}

// press makes the request an ntfy app makes when a's button is pressed:
// a's method to a's URL, with a's headers and body, nothing else.
func press(t *testing.T, a ntfyAction) (int, string) {
	t.Helper()
	req, err := http.NewRequest(a.Method, a.URL, strings.NewReader(a.Body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range a.Headers {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: cmdTimeout}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

// A needs_input message to an ntfy webhook carries Approve and Deny
// buttons. Pressing Approve, exactly as ntfy does, answers the hook
// "allow", records the answer as ntfy-action@node, and the roster leaves
// needs_input within a second; pressing it again, or using its token for
// the other decision, is refused.
func TestNtfyApproveButtonAnswersTheHookOnceAndReplayIsRefused(t *testing.T) {
	e := newEnv(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePorts(t, 1)[0]))
	e.startNode("--name", "solo", "--allow-private", "--http-port", addr)
	e.waitLeader()

	var mu sync.Mutex
	var got []ntfyMsg
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		got = append(got, ntfyMsg{header: r.Header.Clone(), body: string(b)})
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	e.addWebhook(srv.URL+"/harn-topic", "--format", "ntfy", "--on", "needs_input")

	sid, cwd := "cc-ntfy-button", e.root
	e.hook("claude-code", claudeStart(sid, cwd))
	e.hook("claude-code", claudePrompt(sid, cwd))
	e.hook("claude-code", claudePreBash(sid, cwd, "nb1"))
	ch := make(chan result, 1)
	go func() {
		ch <- run(t, e.hookEnv(), claudePermBash(sid, cwd, "nb1"), "hook", "claude-code", "--remote-approve", "--approve-wait", "60s")
	}()
	var msg ntfyMsg
	eventually(t, notifyTimeout, "an ntfy message with buttons", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range got {
			if m.header.Get("Actions") != "" {
				msg = m
				return true, ""
			}
		}
		return false, strconv.Itoa(len(got)) + " messages"
	})
	var acts []ntfyAction
	if err := json.Unmarshal([]byte(msg.header.Get("Actions")), &acts); err != nil || len(acts) != 2 {
		t.Fatalf("the Actions header %q: %v", msg.header.Get("Actions"), err)
	}
	approve, deny := acts[0], acts[1]
	if approve.Label != "Approve" || deny.Label != "Deny" || approve.Action != "http" || approve.Method != "POST" ||
		approve.URL != "http://"+addr+"/act" || !approve.Clear {
		t.Fatalf("the buttons: %+v", acts)
	}
	if strings.Contains(msg.body, "hact_") || !strings.Contains(msg.body, "needs input") {
		t.Fatalf("the message body %q", msg.body)
	}
	var reqs []pendingRow
	mustJSON(t, e.ok("agents", "pending", "--json"), &reqs)
	if len(reqs) != 1 || !strings.Contains(approve.Body, reqs[0].ID) {
		t.Fatalf("the button's body %q, pending %+v", approve.Body, reqs)
	}

	// The Approve token with the Deny button's body: refused, nothing
	// decided.
	mixed := deny
	mixed.Headers = approve.Headers
	if code, body := press(t, mixed); code != http.StatusForbidden || !strings.Contains(body, "other decision") {
		t.Fatalf("the Approve token used to deny: %d %s", code, body)
	}
	// The token as the board's token: refused.
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	for _, v := range approve.Headers {
		if strings.HasPrefix(v, "hact_") {
			req.Header.Set("Authorization", "Bearer "+v)
		}
	}
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the action token as the board's token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	code, body := press(t, approve)
	pressed := time.Now()
	if code != http.StatusOK || !strings.Contains(body, "approved "+reqs[0].ID) {
		t.Fatalf("Approve: %d %s", code, body)
	}
	select {
	case r := <-ch:
		if !strings.Contains(r.stdout, `"behavior":"allow"`) {
			t.Fatalf("the hook's output: %v", r)
		}
	case <-time.After(cmdTimeout):
		t.Fatal("the hook did not return after the button")
	}
	eventually(t, time.Second, "the session leaves needs_input", func() (bool, string) {
		st := e.status(sid)
		return st.Activity != "needs_input", st.Activity
	})
	t.Logf("left needs_input %v after the press", time.Since(pressed))

	var evs []eventJSON
	mustJSON(t, e.ok("agents", "trace", sid, "--json"), &evs)
	n := 0
	for _, ev := range evs {
		if ev.Type == "interaction.input_resolved" {
			n++
			if ev.Attrs["decision"] != "allow" || ev.Attrs["by"] != "ntfy-action@solo" {
				t.Fatalf("the recorded answer: %+v", ev)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d input_resolved, want 1", n)
	}

	// A replay, and the Deny button after the answer: refused.
	if code, body := press(t, approve); code != http.StatusConflict || !strings.Contains(body, "already used") {
		t.Fatalf("a replay: %d %s", code, body)
	}
	if code, body := press(t, deny); code != http.StatusGone && code != http.StatusConflict {
		t.Fatalf("Deny after the answer: %d %s", code, body)
	}
	// Nothing else was recorded.
	mustJSON(t, e.ok("agents", "trace", sid, "--json"), &evs)
	if c := countType(evs, "interaction.input_resolved"); c != 1 {
		t.Fatalf("%d input_resolved after the refusals", c)
	}
}
