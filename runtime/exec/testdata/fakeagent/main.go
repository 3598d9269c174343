// Command fakeagent behaves like a headless coding agent for the executor's
// tests. It reads its prompt on stdin (JSON user messages, one a line, with
// `--input-format stream-json`), answers each turn in Claude Code's
// stream-json (`--output-format stream-json`), Codex's JSON lines (`exec
// --json`) or plain text, runs $FAKEAGENT_HOOK as a PreToolUse and
// PostToolUse hook around each tool call and honours a deny, and exits on
// SIGINT after its cleanup.
//
// Words in a turn's text steer it:
//
//	mutate=PATH       a Write tool call that writes PATH
//	mutate-hang=PATH  the same, then the call hangs before it returns
//	read=PATH         a Read tool call
//	hang              the turn never ends
//	ignore-sigint     SIGINT is noted and ignored (SIGKILL is needed)
//	await-steer       the turn ends only once another message has arrived
//	wait-file=PATH    the turn waits (at most 20 s) for PATH to exist
//	fail              the turn fails and the agent exits with status 3
//
// With $FAKEAGENT_MARK set to a directory, it writes marker files there:
// "sigint" on SIGINT, "sigint-ignored" when it ignores one, "cleanup" on its
// way out after a SIGINT, "pid" with its pid at start.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	format       = "text" // text, claude or codex
	ignoreSigint atomic.Bool
	toolN        int
	failed       bool
	out          = bufio.NewWriter(os.Stdout)
)

func main() {
	args := strings.Join(os.Args[1:], " ")
	streamIn := strings.Contains(args, "--input-format stream-json")
	switch {
	case strings.Contains(args, "--output-format stream-json"):
		format = "claude"
	case strings.Contains(args, "exec --json"):
		format = "codex"
	}
	mark("pid", strconv.Itoa(os.Getpid()))
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT)
	go func() {
		for range sig {
			mark("sigint", "")
			if ignoreSigint.Load() {
				mark("sigint-ignored", "")
				continue
			}
			mark("cleanup", "")
			os.Exit(130)
		}
	}()

	emit(map[string]any{"type": "system", "subtype": "init", "session_id": "fake-session", "tools": []string{"Read", "Write"}},
		map[string]any{"type": "thread.started", "thread_id": "fake-thread"})
	if !streamIn {
		b, _ := io.ReadAll(io.LimitReader(os.Stdin, 8<<20))
		turn(string(b), nil)
	} else {
		msgs := make(chan string, 16)
		go func() {
			defer close(msgs)
			sc := bufio.NewScanner(os.Stdin)
			sc.Buffer(make([]byte, 64<<10), 8<<20)
			for sc.Scan() {
				var m struct {
					Type    string `json:"type"`
					Message struct {
						Content string `json:"content"`
					} `json:"message"`
				}
				if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == "user" {
					msgs <- m.Message.Content
				}
			}
		}()
		var pushback []string
		for {
			var text string
			if len(pushback) > 0 {
				text, pushback = pushback[0], pushback[1:]
			} else if m, ok := <-msgs; ok {
				text = m
			} else {
				break
			}
			turn(text, func() {
				if m, ok := <-msgs; ok {
					pushback = append(pushback, m)
				}
			})
		}
	}
	out.Flush()
	if failed {
		os.Exit(3)
	}
}

// turn answers one user message.
func turn(text string, awaitSteer func()) {
	words := strings.Fields(directives(text))
	for _, w := range words {
		if w == "ignore-sigint" {
			ignoreSigint.Store(true)
		}
	}
	say("echo: " + text)
	fail := false
	for _, w := range words {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "mutate", "mutate-hang":
			tool("Write", map[string]any{"file_path": v, "content": "mutated\n"}, func() string {
				if err := os.WriteFile(v, []byte("mutated\n"), 0o644); err != nil {
					return "error: " + err.Error()
				}
				if k == "mutate-hang" {
					hang()
				}
				return "wrote " + v
			})
		case "read":
			tool("Read", map[string]any{"file_path": v}, func() string {
				b, err := os.ReadFile(v)
				if err != nil {
					return "error: " + err.Error()
				}
				return fmt.Sprintf("read %d bytes", len(b))
			})
		case "hang":
			hang()
		case "await-steer":
			if awaitSteer != nil {
				awaitSteer()
			}
		case "wait-file":
			for i := 0; i < 2000; i++ {
				if _, err := os.Stat(v); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		case "fail":
			fail = true
		}
	}
	failed = failed || fail
	result := "done: " + strings.Join(words, " ")
	if fail {
		emit(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "result": "failed: " + text},
			map[string]any{"type": "turn.failed", "error": map[string]any{"message": "failed: " + text}})
		if format == "text" {
			fmt.Fprintln(out, "failed: "+text)
		}
	} else {
		emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": result},
			map[string]any{"type": "turn.completed", "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}})
		if format == "text" {
			fmt.Fprintln(out, result)
		}
	}
	out.Flush()
}

// directives is the text without the harn handoff block: context, not
// words to act on.
func directives(text string) string {
	if i := strings.Index(text, "</harn-handoff>"); i >= 0 {
		return text[i+len("</harn-handoff>"):]
	}
	return text
}

// tool runs one tool call between its hooks; a deny skips it.
func tool(name string, input map[string]any, do func() string) {
	toolN++
	id := fmt.Sprintf("toolu_%d_%d", os.Getpid(), toolN)
	emit(map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}}},
		map[string]any{"type": "item.started", "item": map[string]any{"id": id, "type": "command_execution", "command": name, "status": "in_progress"}})
	out.Flush()
	payload := map[string]any{"session_id": "fake-session", "transcript_path": "", "cwd": cwd(), "hook_event_name": "PreToolUse",
		"tool_name": name, "tool_input": input, "tool_use_id": id}
	if deny, reason := hook(payload); deny {
		say("denied " + name + ": " + reason)
		emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "is_error": true, "content": "denied: " + reason}}}},
			map[string]any{"type": "item.completed", "item": map[string]any{"id": id, "type": "command_execution", "status": "failed"}})
		return
	}
	res := do()
	emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": res}}}},
		map[string]any{"type": "item.completed", "item": map[string]any{"id": id, "type": "command_execution", "status": "completed"}})
	payload["hook_event_name"], payload["tool_response"] = "PostToolUse", res
	hook(payload)
	say(name + ": " + res)
}

// hook runs $FAKEAGENT_HOOK with payload on stdin, as Claude Code does, and
// reads a PreToolUse decision (or exit status 2) from it.
func hook(payload map[string]any) (deny bool, reason string) {
	cmdline := os.Getenv("FAKEAGENT_HOOK")
	if cmdline == "" {
		return false, ""
	}
	b, _ := json.Marshal(payload)
	cmd := exec.Command("/bin/sh", "-c", cmdline)
	cmd.Stdin = bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return false, ""
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		return false, ""
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
		return true, strings.TrimSpace(stderr.String())
	}
	var ans struct {
		HookSpecificOutput struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if json.Unmarshal(stdout.Bytes(), &ans) == nil && ans.HookSpecificOutput.PermissionDecision == "deny" {
		return true, ans.HookSpecificOutput.PermissionDecisionReason
	}
	return false, ""
}

// say emits an assistant text message.
func say(text string) {
	emit(map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "text", "text": text}}}},
		map[string]any{"type": "item.completed", "item": map[string]any{"id": "msg", "type": "agent_message", "text": text}})
	if format == "text" {
		fmt.Fprintln(out, strings.ReplaceAll(text, "\n", " "))
	}
	out.Flush()
}

// emit writes the line of the current JSON format, if any.
func emit(claude, codex map[string]any) {
	var v map[string]any
	switch format {
	case "claude":
		v = claude
	case "codex":
		v = codex
	default:
		return
	}
	b, _ := json.Marshal(v)
	out.Write(append(b, '\n'))
}

func hang() {
	out.Flush()
	for {
		time.Sleep(time.Hour)
	}
}

func mark(name, content string) {
	dir := os.Getenv("FAKEAGENT_MARK")
	if dir == "" {
		return
	}
	os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
}

func cwd() string {
	d, _ := os.Getwd()
	return d
}
