package cli_test

// The pre-call check through the hook: `harn hook claude-code` PreToolUse
// for a session whose harn task the node checks each call against, beside
// the same hook for a session without a task and `harn version`, in one
// run.

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// preCallRuns is how many runs of each kind one iteration takes.
const preCallRuns = 300

// claudePayload is a Claude Code hook payload of session sid.
func claudePayload(sid, event, rest string) []byte {
	return []byte(`{"session_id":"` + sid + `","transcript_path":"/home/ana/.claude/projects/-home-ana-shop/` + sid +
		`.jsonl","cwd":"/home/ana/shop","permission_mode":"default","hook_event_name":"` + event + `"` + rest + `}`)
}

// BenchmarkHookPreCallCheck reports p50 and p99 of `harn hook
// claude-code` PreToolUse for a session with an active harn task
// (read-only grants, a Read call: allowed after the runtime's checks),
// for a session without one, and of `harn version`, interleaved; and
// the check's added cost (task − no task) at p50 and p99. Each checked
// call is ended by an untimed PostToolUse, as an agent's would be.
func BenchmarkHookPreCallCheck(b *testing.B) {
	dir := shortDir(b)
	r := newRunner(b, dir)
	n := benchNode(b, dir)
	defer n.Close()
	const withTask = "5c0e7a1d-2b3f-4c5d-8e9f-0a1b2c3d4e5f"
	const plain = "8a1f0c2e-5b7d-4e21-9c3a-0d6e2f4b1a77"
	for _, sid := range []string{withTask, plain} {
		r.run(b, claudePayload(sid, "SessionStart", `,"source":"startup"`), true, "hook", "claude-code")
	}
	grants, err := taskwire.Profile("read-only")
	if err != nil {
		b.Fatal(err)
	}
	res, err := n.Tasks().Do(taskwire.Action{Op: taskwire.OpStart, Session: withTask, Text: "read the code", Grants: grants})
	if err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		if v, ok := n.Tasks().Brief(withTask); ok && v.State == "running" {
			break
		}
		if time.Now().After(deadline) || i > 1000 {
			b.Fatalf("task %s did not start running", res.Task.ID)
		}
		time.Sleep(10 * time.Millisecond)
	}
	read := func(sid string, call int) []byte {
		return claudePayload(sid, "PreToolUse", `,"tool_name":"Read","tool_input":{"file_path":"/home/ana/shop/main.go"},"tool_use_id":"toolu_`+strconv.Itoa(call)+`"`)
	}
	post := func(call int) []byte {
		return claudePayload(withTask, "PostToolUse", `,"tool_name":"Read","tool_input":{"file_path":"/home/ana/shop/main.go"},"tool_use_id":"toolu_`+strconv.Itoa(call)+`","tool_response":{}}`)
	}
	// The check is live: a Bash call is outside read-only and is denied.
	_, out := r.run(b, claudePayload(withTask, "PreToolUse", `,"tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"toolu_bash"`), true, "hook", "claude-code")
	if !bytes.Contains(out, []byte(`"deny"`)) {
		b.Fatalf("a Bash call of a read-only task was not denied: %s", out)
	}
	call := 0
	for i := 0; i < 10; i++ { // warm the page cache and the node
		call++
		r.run(b, read(withTask, call), true, "hook", "claude-code")
		r.run(b, post(call), true, "hook", "claude-code")
		r.run(b, read(plain, call), true, "hook", "claude-code")
		r.run(b, nil, false, "version")
	}
	var task, none, version []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < preCallRuns; j++ {
			call++
			d, out := r.run(b, read(withTask, call), true, "hook", "claude-code")
			if bytes.Contains(out, []byte(`"deny"`)) {
				b.Fatalf("the checked Read call was denied: %s", out)
			}
			task = append(task, d)
			b.StopTimer()
			r.run(b, post(call), true, "hook", "claude-code")
			b.StartTimer()
			d, _ = r.run(b, read(plain, call), true, "hook", "claude-code")
			none = append(none, d)
			d, _ = r.run(b, nil, false, "version")
			version = append(version, d)
		}
	}
	b.StopTimer()
	if v, ok := n.Tasks().Brief(withTask); !ok || v.State != "running" {
		b.Errorf("the task is %+v after the run, want still running", v)
	}
	slices.Sort(task)
	slices.Sort(none)
	slices.Sort(version)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(pct(task, 50)), "task-p50-ms")
	b.ReportMetric(ms(pct(task, 99)), "task-p99-ms")
	b.ReportMetric(ms(pct(none, 50)), "notask-p50-ms")
	b.ReportMetric(ms(pct(none, 99)), "notask-p99-ms")
	b.ReportMetric(ms(pct(version, 50)), "version-p50-ms")
	b.ReportMetric(ms(pct(version, 99)), "version-p99-ms")
	b.ReportMetric(ms(pct(task, 50)-pct(none, 50)), "check-added-p50-ms")
	b.ReportMetric(ms(pct(task, 99)-pct(none, 99)), "check-added-p99-ms")
}
