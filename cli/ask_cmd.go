package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks/taskapi"
	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/secretfile"
	"github.com/harn-dev/harn/util/text"
)

// Environment of harn ask: the provider key, or a 0600 file holding it.
const (
	envProviderKey     = "HARN_PROVIDER_KEY"
	envProviderKeyFile = "HARN_PROVIDER_KEY_FILE"
)

// maxPromptBytes bounds a prompt read from stdin.
const maxPromptBytes = 256 << 10

// ErrBadAsk means harn ask's flags or prompt are wrong.
var ErrBadAsk = errors.New("ask")

func newAskCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "ask [flags] PROMPT|-",
		Short: "run one task through harn's own agent loop on a node and print the final answer",
		Long: `ask runs one task through harn's own agent loop without a TUI, as other agents'
print modes do: the node runs the loop (model calls, tool calls under the task's
grants), and ask prints the final answer. - reads the prompt from stdin;
--json streams the turn's events as JSON lines. The provider key comes from
HARN_PROVIDER_KEY or the 0600 file HARN_PROVIDER_KEY_FILE names, never a flag;
it is sent to this node only, never to another (--node uses that node's own).`,
		Args: cobra.ExactArgs(1),
		RunE: runAsk,
	}
	c.Flags().String("session", "", "continue this harn session (its id): the prompt is its next task")
	c.Flags().String("fork", "", "start a new harn session that continues this session's context as a lane of it (nothing copied)")
	c.Flags().Bool("timing", false, "print where the time went on stderr: connect, the task's start, each event's node time and arrival, exit")
	addHarnFlags(c)
	addGrantFlags(c)
	addTaskFlags(c)
	return c
}

// addHarnFlags are the loop's options (ask, task start --agent harn).
func addHarnFlags(c *cobra.Command) {
	c.Flags().String("provider", "", "the model API: openai (chat completions, the default) or anthropic (Messages)")
	c.Flags().String("provider-url", "", "the API's base URL (llama.cpp, Ollama, vLLM, OpenRouter, OpenAI; default the vendor's)")
	c.Flags().String("model", "", "the model name")
	c.Flags().Int("context-window", 0, "the model's context window in tokens (default: known for common models)")
	c.Flags().Int("max-output", 0, "the model's max output in tokens (default: known for common models)")
	c.Flags().Bool("compaction", true, "condense completed work with the model at 80% of the budget; false: only the deterministic fallback, once over budget (default: the node's compaction.enabled)")
	c.Flags().StringArray("mcp", nil, "a stdio MCP server for this run, NAME=COMMAND (split as a shell splits words, no shell); repeatable")
}

// harnOptions reads the loop's flags; the key from the environment. With
// --node the target runs its own provider: only a --provider or
// --provider-url given on the command line is sent (and refused there),
// never one from this user's environment or config file, and --model may
// be left to the target's default.
func harnOptions(c *cobra.Command) (*taskwire.HarnOptions, error) {
	o := &taskwire.HarnOptions{}
	node, _ := c.Flags().GetString("node")
	explicit := func(name string) string {
		f := c.Flags().Lookup(name)
		if f == nil || (node != "" && !f.Changed) {
			return ""
		}
		return f.Value.String()
	}
	o.Provider, o.URL = explicit("provider"), explicit("provider-url")
	o.Model, _ = c.Flags().GetString("model")
	o.ContextWindow, _ = c.Flags().GetInt("context-window")
	o.MaxOutput, _ = c.Flags().GetInt("max-output")
	o.MCP, _ = c.Flags().GetStringArray("mcp")
	// --compaction given (or from the environment): this run says; else
	// the node's compaction.enabled does
	if f := c.Flags().Lookup("compaction"); f != nil && f.Changed {
		on, _ := c.Flags().GetBool("compaction")
		o.NoCompaction, o.Compaction = !on, on
	}
	if f := c.Flags().Lookup("fork"); f != nil {
		o.Fork = f.Value.String()
	}
	if o.Provider != "" && o.Provider != "openai" && o.Provider != "anthropic" {
		return nil, hook.UsageErr(fmt.Errorf("%w: --provider %q; use openai or anthropic", ErrBadAsk, o.Provider))
	}
	if o.Model == "" && node == "" {
		return nil, hook.UsageErr(fmt.Errorf("%w: name the model with --model M", ErrBadAsk))
	}
	if node == "" {
		k, err := providerKey()
		if err != nil {
			return nil, err
		}
		o.Key = k
	}
	return o, nil
}

// providerKey is the caller's provider key: HARN_PROVIDER_KEY, else the
// file HARN_PROVIDER_KEY_FILE names, which must pass the checks of the
// node's own secret files (this user's, 0600, not a symlink): exit 13
// naming the fix otherwise.
func providerKey() (string, error) {
	if k := os.Getenv(envProviderKey); k != "" {
		return k, nil
	}
	f := os.Getenv(envProviderKeyFile)
	if f == "" {
		return "", nil
	}
	k, err := secretfile.Read(f, hook.MaxSecretFile)
	if err != nil {
		var ie *secretfile.InsecureFileError
		if errors.As(err, &ie) {
			return "", hook.WithCode(hook.ExitPermission, fmt.Errorf("%s: %s", envProviderKeyFile, strings.TrimPrefix(ie.Error(), "trust: ")))
		}
		return "", hook.UsageErr(fmt.Errorf("%w: %s: %w", ErrBadAsk, envProviderKeyFile, err))
	}
	if k == "" {
		return "", hook.UsageErr(fmt.Errorf("%w: %s %s is empty; write the key into it", ErrBadAsk, envProviderKeyFile, text.OneLine(f)))
	}
	return k, nil
}

func askPrompt(c *cobra.Command, arg string) (string, error) {
	if arg != "-" {
		return arg, nil
	}
	b, err := io.ReadAll(io.LimitReader(c.InOrStdin(), maxPromptBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxPromptBytes {
		return "", hook.UsageErr(fmt.Errorf("%w: the prompt on stdin is over %d bytes", ErrBadAsk, maxPromptBytes))
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", hook.UsageErr(fmt.Errorf("%w: the prompt on stdin is empty", ErrBadAsk))
	}
	return s, nil
}

// warmed is closed once warmTaskMessages is done; nil when it never ran.
var warmed chan struct{}

// A `harn ask` warms the task call's messages from the start, while the
// command tree is built and the flags read.
func init() {
	if len(os.Args) > 1 && os.Args[1] == "ask" {
		warmed = warmTaskMessages()
	}
}

// warmTaskMessages builds the task call's message descriptors (protobuf
// builds them lazily, at a process's first marshal: about a millisecond)
// on a second core.
func warmTaskMessages() chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := &api.TaskRequest{Action: &api.TaskAction{Op: "start", Harn: &api.HarnOptions{Model: "m"}}}
		res := &api.TaskResponse{Result: &api.TaskResult{Node: "n", Task: &api.TaskView{Id: "t"}, Events: []*api.AgentEvent{{Type: "turn.end"}}}}
		for _, m := range []proto.Message{req, res} {
			if b, err := proto.Marshal(m); err == nil {
				_ = proto.Unmarshal(b, m)
			}
		}
	}()
	return done
}

func runAsk(c *cobra.Command, args []string) error {
	if warmed != nil {
		defer func() { <-warmed }() // the goroutine ends with the command
	}
	prompt, err := askPrompt(c, args[0])
	if err != nil {
		return err
	}
	node, _ := c.Flags().GetString("node")
	session, _ := c.Flags().GetString("session")
	if fork, _ := c.Flags().GetString("fork"); fork != "" && session != "" {
		return hook.UsageErr(fmt.Errorf("%w: --fork starts a new session from another's context; --session continues one: give one of them", ErrBadAsk))
	}
	g, err := grantsOf(c)
	if err != nil {
		return err
	}
	a := taskwire.Action{Op: taskwire.OpStart, Text: prompt, Grants: g, Agent: taskwire.AgentHarn}
	if session != "" {
		// Its next task; a session that ended (an earlier ask ended it,
		// or the node restarted) opens again with this caller's key.
		a = taskwire.Action{Op: taskwire.OpFollowUp, Session: session, Text: prompt, Grants: g, Harn: &taskwire.HarnOptions{}}
		if node == "" {
			if a.Harn.Key, err = providerKey(); err != nil {
				return err
			}
		}
	} else {
		if a.Harn, err = harnOptions(c); err != nil {
			return err
		}
		if node == "" {
			a.Workdir, _ = os.Getwd()
		}
	}
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A reader that goes (`harn ask --json … | head -1`) makes the next
	// write fail instead of killing the process, so the session still ends.
	signal.Ignore(syscall.SIGPIPE)
	tm := newAskTiming(c)
	defer tm.done()
	p := hook.PlaceOf(c)
	cl, err := connect(ctx, p, 5*time.Second)
	if err != nil {
		return err
	}
	defer cl.Close()
	tm.mark("connected")
	call := func(ctx context.Context, a taskwire.Action) (taskwire.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		defer cancel()
		res, err := cl.api.Task(ctx, &api.TaskRequest{Action: taskapi.ActionToAPI(a), Node: node})
		if err != nil {
			return taskwire.Result{}, taskErr(err, p)
		}
		return taskapi.ResultFromAPI(res.Result)
	}
	r, err := call(ctx, a)
	if err != nil {
		return err
	}
	if r.Task == nil {
		return fmt.Errorf("%w: the node answered without a task", ErrBadAsk)
	}
	task, sess := r.Task.ID, r.Session
	if session == "" || r.Reopened {
		// One-shot: the session ask opened ends when it returns (its
		// history stays; --session opens it again), so asks never crowd
		// the roster or other agents' peers.
		defer func() {
			endAskSession(c, cl, p, sess)
			tm.mark("session ended")
		}()
	}
	if r.Message != "" { // the node did not load the project's .harn files: untrusted (harn trust)
		fmt.Fprintln(c.ErrOrStderr(), text.OneLine(r.Message))
	}
	tm.mark("task started")
	out := c.OutOrStdout()
	enc := json.NewEncoder(out)
	o := askOutcome{task: task, session: sess}
	since := 0
	for {
		r, err := call(ctx, taskwire.Action{Op: taskwire.OpEvents, Task: task, Since: since, WaitMS: 2000})
		if err != nil {
			if ctx.Err() != nil {
				return interruptAsk(c, call, task)
			}
			return err
		}
		tm.polled(r.Events)
		for _, e := range r.Events {
			since++
			o.see(c, e)
			if hook.AsJSON(c) {
				if e.Type == "turn.start" {
					e.Text = text.Clip(e.Text, 200)
				}
				ev := askEvent{Event: e, Session: sess}
				if e.Type == "turn.end" && e.Task == task {
					o.settle(ctx, call)
					ev.Refused, ev.RefusedCalls = o.refused, o.refusedCalls
				}
				if err := enc.Encode(ev); err != nil {
					return err
				}
			}
			if e.Type != "turn.end" || e.Task != task {
				continue
			}
			if !hook.AsJSON(c) {
				for _, line := range strings.Split(e.Text, "\n") {
					fmt.Fprintln(out, text.Sanitize(line))
				}
				o.settle(ctx, call)
			}
			if e.Status != "succeeded" {
				return hook.WithCode(hook.ExitError, fmt.Errorf("%w: task %s %s", ErrBadAsk, task, e.Status))
			}
			return o.result(c)
		}
	}
}
