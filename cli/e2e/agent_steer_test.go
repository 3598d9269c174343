package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harn-dev/harn/internal/testsupport/modeltest"
)

// modelArgs is `harn ask` against a scripted server of package modeltest.
func modelArgs(m *modeltest.Server, extra ...string) []string {
	return append([]string{"ask", "--provider-url", m.URL(), "--model", "test-model"}, extra...)
}

// harnSession is the id of the env's one harn session.
func harnSession(t *testing.T, e *env) string {
	t.Helper()
	var ss []sessionJSON
	mustJSON(t, e.ok("agents", "list", "--all", "--json"), &ss)
	for _, s := range ss {
		if s.Agent == "harn" {
			return s.SessionID
		}
	}
	t.Fatalf("no harn session in %+v", ss)
	return ""
}

// steerJSON is what `harn task steer --json` answers.
type steerJSON struct {
	Steer struct {
		Mode    string `json:"mode"`
		Task    string `json:"task"`
		Steered string `json:"steered"`
		Message string `json:"message"`
	} `json:"steer"`
}

// waitArrived waits (bounded) until the server has n requests.
func waitArrived(t *testing.T, m *modeltest.Server, n int) {
	t.Helper()
	deadline := time.After(45 * time.Second)
	for len(m.Requests()) < n {
		select {
		case <-m.Arrived():
		case <-deadline:
			t.Fatalf("%d model requests, want %d", len(m.Requests()), n)
		}
	}
}

// TestAskSteerLandsAtTheStepBoundary: a steer sent while a shell call
// runs reaches the model in the very next request, after the tool result,
// and in no request before; a steer naming the ended turn becomes a
// follow-up task and says so.
func TestAskSteerLandsAtTheStepBoundary(t *testing.T) {
	e := askEnv(t)
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The shell blocks until the test writes a line into the fifo.
	m := modeltest.New(t,
		modeltest.Calls(true, modeltest.Call{ID: "c1", Name: "shell", Args: `{"command":"read line < ` + fifo + `; echo got $line"}`}),
		modeltest.Text("steered answer"))
	ch, _ := askJSON(t, e, modelArgs(m, "--profile", "full", "run the script"))
	pre := waitFor(t, ch, "tool.pre")
	task := pre["task"].(string)
	sess := harnSession(t, e)

	var st steerJSON
	mustJSON(t, e.ok("task", "steer", "--session", sess, "--task", task, "--json", "also mention pelicans"), &st)
	if st.Steer.Mode != "delivered" || st.Steer.Task != task || !strings.Contains(st.Steer.Message, "next step boundary") {
		t.Fatalf("steer answer %+v", st)
	}
	// The tool still runs (it waits on the fifo): no model call could
	// have happened since the first.
	if n := len(m.Requests()); n != 1 {
		t.Fatalf("%d model requests while the tool ran", n)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("ready\n")
	w.Close()
	if end := waitFor(t, ch, "turn.end"); end["status"] != "succeeded" || end["text"] != "steered answer" {
		t.Fatalf("end %v", end)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if modeltest.Contains(modeltest.Messages(reqs[0]), "pelicans") {
		t.Fatalf("the steer reached the model before the step boundary: %v", modeltest.Messages(reqs[0]))
	}
	ms := modeltest.Messages(reqs[1])
	if len(ms) < 2 || ms[len(ms)-1] != "user:also mention pelicans" || !strings.HasPrefix(ms[len(ms)-2], "tool:got ready") {
		t.Fatalf("the steer is not right after the tool result: %q", ms)
	}

	// The turn has ended: a steer naming it becomes a follow-up. harn ask
	// ended its session when it returned, so this runs in a session that
	// harn task start opened, which stays.
	m = modeltest.New(t, modeltest.Text("first answer"), modeltest.Text("follow-up answer"), modeltest.Text("second follow-up answer"))
	started := e.task("start", "--agent", "harn", "--provider-url", m.URL(), "--model", "test-model", "--profile", "full", "say something")
	sess, task = started.Session, started.Task.ID
	e.waitTask(task, "succeeded")
	r := e.harn("", "task", "steer", "--session", sess, "--task", task, "--json", "one more thing")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	mustJSON(t, r.stdout, &st)
	if st.Steer.Mode != "follow_up" || st.Steer.Steered != task || st.Steer.Task == task || st.Steer.Task == "" ||
		!strings.Contains(st.Steer.Message, "follow-up") || !strings.Contains(st.Steer.Message, "had already ended") {
		t.Fatalf("late steer answer %+v", st)
	}
	human := e.ok("task", "steer", "--session", sess, "--task", task, "and another")
	if !strings.Contains(human, "follow-up") {
		t.Fatalf("the printed answer does not say follow-up: %q", human)
	}
	waitArrived(t, m, 2)
	if ms := modeltest.Messages(m.Requests()[1]); !modeltest.Contains(ms, "user:one more thing") {
		t.Fatalf("the follow-up did not reach the model: %q", ms)
	}
	var show map[string]any
	eventually(t, 30*time.Second, "the follow-up task ends", func() (bool, string) {
		out := e.ok("task", "show", st.Steer.Task, "--json")
		_ = json.Unmarshal([]byte(out), &show)
		return strings.Contains(out, `"succeeded"`), out
	})
}
