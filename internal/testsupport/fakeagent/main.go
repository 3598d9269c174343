// Command fakeagent is an interactive agent for the tests of hosted
// terminals: it draws a screen, reads its terminal in raw mode, logs every
// byte it receives, and calls the installed hook command as Claude Code
// would (SessionStart, UserPromptSubmit, a permission Notification when it
// asks a question, Stop, SessionEnd).
//
//	fakeagent [--hook CMD] [--log FILE] [--turn DURATION] [PROMPT]
//
// A line typed and sent with Enter (a carriage return) is a prompt: it
// opens a turn, which stops after --turn (default 200ms) with the Stop
// hook. A prompt that contains "wait" keeps its turn open until a line
// "finish" is sent; one that contains "ask" draws a question ("Allow Bash:
// rm -rf build? [y/n]"), sends a permission_prompt Notification, and
// waits for y or n before it stops. Esc alone interrupts the turn: it
// draws "Interrupted" and, as Claude Code, reports no Stop. Ctrl+D ends
// the agent (SessionEnd). SIGTERM and SIGHUP end it too.
//
// --hook is the hook's command line (default: `harn-hook hook
// claude-code` from PATH); the hook inherits this process's environment,
// so HARN_SOCKET, HARN_DATA_DIR and HARN_HOSTED_ID reach it. --log gets
// every byte read from the terminal, as read.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"
)

type agent struct {
	hook    []string
	session string
	cwd     string
	turnFor time.Duration
	log     *os.File

	mu       sync.Mutex
	lines    []string
	input    []byte
	turn     int  // the open turn's number, 0 when none
	asking   bool // a question waits for y or n
	waitTurn bool // the open turn waits for "finish"
	rows     int
	cols     int
}

func main() {
	hook := flag.String("hook", "harn-hook hook claude-code", "the hook's command line")
	logPath := flag.String("log", "", "file that gets every byte read from the terminal")
	turnFor := flag.Duration("turn", 200*time.Millisecond, "how long a turn works before it stops")
	flag.Parse()
	a := &agent{hook: strings.Fields(*hook), turnFor: *turnFor}
	a.cwd, _ = os.Getwd()
	a.session = fmt.Sprintf("fake-%d-%d", os.Getpid(), time.Now().UnixNano())
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeagent:", err)
			os.Exit(2)
		}
		a.log = f
	}
	fd := int(os.Stdin.Fd())
	if term.IsTerminal(fd) {
		old, err := term.MakeRaw(fd)
		if err == nil {
			defer term.Restore(fd, old)
		}
	}
	a.size()
	a.call(map[string]any{"hook_event_name": "SessionStart", "source": "startup"})
	a.say("fake agent " + a.session + " ready")
	if p := strings.Join(flag.Args(), " "); p != "" {
		a.prompt(p)
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGWINCH)
	in := make(chan []byte)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := os.Stdin.Read(buf)
			if n > 0 {
				in <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				close(in)
				return
			}
		}
	}()
	for {
		select {
		case s := <-sig:
			if s == syscall.SIGWINCH {
				a.size()
				a.draw()
				continue
			}
			a.end("signal " + s.String())
			return
		case b, ok := <-in:
			if !ok {
				a.end("terminal closed")
				return
			}
			if a.log != nil {
				a.log.Write(b)
			}
			if !a.keys(b) {
				a.end("ctrl-d")
				return
			}
		}
	}
}

// size reads the terminal's size.
func (a *agent) size() {
	c, r, err := term.GetSize(int(os.Stdout.Fd()))
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil || r <= 0 || c <= 0 {
		r, c = 24, 80
	}
	a.rows, a.cols = r, c
}

// keys handles what was typed; false ends the agent.
func (a *agent) keys(b []byte) bool {
	if len(b) == 1 && b[0] == 0x1b {
		a.interrupt()
		return true
	}
	if len(b) > 1 && b[0] == 0x1b {
		return true // an escape sequence (a key, a terminal's answer): ignored
	}
	for _, c := range b {
		switch {
		case c == 0x04:
			return false
		case c == '\r' || c == '\n':
			a.mu.Lock()
			line := string(a.input)
			a.input = nil
			a.mu.Unlock()
			a.line(line)
		case c == 0x7f || c == 0x08:
			a.mu.Lock()
			if len(a.input) > 0 {
				a.input = a.input[:len(a.input)-1]
			}
			a.mu.Unlock()
			a.draw()
		case c >= 0x20:
			a.mu.Lock()
			asking := a.asking
			if !asking {
				a.input = append(a.input, c)
			}
			a.mu.Unlock()
			if asking && (c == 'y' || c == 'n') {
				a.answer(c == 'y')
				continue
			}
			a.draw()
		}
	}
	return true
}

// line is a line sent with Enter.
func (a *agent) line(l string) {
	a.mu.Lock()
	waiting := a.waitTurn && a.turn != 0
	a.mu.Unlock()
	if waiting && strings.TrimSpace(l) == "finish" {
		a.say("> finish")
		a.stopTurn("finished")
		return
	}
	if strings.TrimSpace(l) == "" {
		return
	}
	a.prompt(l)
}

// prompt is a prompt: during a turn it is steering (it reaches the turn);
// otherwise it opens one.
func (a *agent) prompt(p string) {
	a.say("> " + p)
	a.call(map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": p})
	a.mu.Lock()
	if a.turn != 0 {
		a.mu.Unlock()
		a.say("(steered into the running turn)")
		return
	}
	a.turn++
	n := a.turn
	a.waitTurn = strings.Contains(p, "wait")
	ask := strings.Contains(p, "ask")
	a.mu.Unlock()
	a.say("working on: " + p)
	if ask {
		a.mu.Lock()
		a.asking = true
		a.mu.Unlock()
		a.say("Allow Bash: rm -rf build? [y/n]")
		a.call(map[string]any{"hook_event_name": "Notification", "notification_type": "permission_prompt",
			"message": "Claude needs your permission to use Bash"})
		return
	}
	if a.waitTurn {
		return
	}
	time.AfterFunc(a.turnFor, func() {
		a.mu.Lock()
		same := a.turn == n
		a.mu.Unlock()
		if same {
			a.stopTurn("done: " + p)
		}
	})
}

func (a *agent) answer(yes bool) {
	a.mu.Lock()
	a.asking = false
	a.mu.Unlock()
	if yes {
		a.say("allowed; ran it")
	} else {
		a.say("denied")
	}
	a.stopTurn("answered")
}

// stopTurn ends the open turn with the Stop hook.
func (a *agent) stopTurn(msg string) {
	a.mu.Lock()
	if a.turn == 0 {
		a.mu.Unlock()
		return
	}
	a.turn, a.waitTurn, a.asking = 0, false, false
	a.mu.Unlock()
	a.say(msg)
	a.call(map[string]any{"hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": msg})
}

// interrupt is Esc: the turn ends without a Stop hook, as Claude Code's.
func (a *agent) interrupt() {
	a.mu.Lock()
	a.turn, a.waitTurn, a.asking = 0, false, false
	a.mu.Unlock()
	a.say("Interrupted")
}

func (a *agent) end(why string) {
	a.say("bye (" + why + ")")
	a.call(map[string]any{"hook_event_name": "SessionEnd", "reason": "other"})
}

// say adds a line to the transcript and draws the screen.
func (a *agent) say(l string) {
	a.mu.Lock()
	a.lines = append(a.lines, l)
	if len(a.lines) > 200 {
		a.lines = a.lines[len(a.lines)-200:]
	}
	a.mu.Unlock()
	a.draw()
}

// draw paints the whole screen: a title with the size, the transcript's
// last lines, the input line.
func (a *agent) draw() {
	a.mu.Lock()
	rows, cols := a.rows, a.cols
	body := rows - 3
	lines := a.lines
	if len(lines) > body {
		lines = lines[len(lines)-body:]
	}
	var b bytes.Buffer
	b.WriteString("\x1b[H\x1b[2J")
	fmt.Fprintf(&b, "\x1b[1;1H\x1b[7m fake agent  %dx%d \x1b[0m", rows, cols)
	for i, l := range lines {
		if len(l) > cols {
			l = l[:cols]
		}
		fmt.Fprintf(&b, "\x1b[%d;1H%s", i+3, l)
	}
	in := string(a.input)
	fmt.Fprintf(&b, "\x1b[%d;1H> %s", rows, in)
	a.mu.Unlock()
	os.Stdout.Write(b.Bytes())
}

// call runs the hook with a Claude-Code-shaped payload, bounded.
func (a *agent) call(fields map[string]any) {
	if len(a.hook) == 0 {
		return
	}
	fields["session_id"] = a.session
	fields["cwd"] = a.cwd
	fields["transcript_path"] = ""
	fields["permission_mode"] = "default"
	b, _ := json.Marshal(fields)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.hook[0], a.hook[1:]...)
	cmd.Stdin = bytes.NewReader(b)
	_ = cmd.Run()
}
