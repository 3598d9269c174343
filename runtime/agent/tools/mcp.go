package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/harn-dev/harn/util/procguard"
	"github.com/harn-dev/harn/util/text"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP bounds: every reply is bounded in size, count and time.
const (
	DefaultMCPTimeout  = 60 * time.Second // one tools/call
	mcpConnectTimeout  = 20 * time.Second // start, initialize and the first tools/list
	mcpListTimeout     = 10 * time.Second // a tools/list after list_changed
	mcpMaxFrame        = 4 << 20          // one JSON-RPC message
	mcpMaxTools        = 256              // tools kept per server
	mcpMaxPages        = 16               // tools/list pages read
	mcpMaxSchema       = 64 << 10         // one tool's input schema
	mcpMaxDescription  = 2 << 10          // one tool's description
	mcpMaxContentItems = 64               // content blocks of a result read
	mcpStopGrace       = 2 * time.Second  // stdin closed → SIGTERM → SIGKILL
	maxToolName        = 64               // what providers accept
)

// mcpTool is one tool of a server as published: the name the model calls
// and its contract.
type mcpTool struct {
	name     string // mcp__server__tool
	remote   string // the server's own name for it
	desc     string
	schema   json.RawMessage // canonical JSON
	hash     string
	resolved *jsonschema.Resolved
	readOnly bool
}

// mcpConn is one connected server.
type mcpConn struct {
	b        *Toolbox
	cfg      MCPServer
	provider string

	mu    sync.Mutex
	sess  *mcp.ClientSession
	tools map[string]*mcpTool // by published name
	dirty bool

	cmd      *exec.Cmd
	done     chan struct{} // closed when the stdio process has been waited for
	release  func()        // the recorded process group's (OnGroup); nil: none
	stopOnce sync.Once
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// publishedName is the name a model calls: mcp__SERVER__TOOL with what a
// provider does not accept replaced by _.
func publishedName(server, tool string) (string, bool) {
	n := "mcp__" + server + "__" + unsafeName.ReplaceAllString(tool, "_")
	return n, len(n) <= maxToolName && tool != ""
}

func (c *mcpConn) connect(ctx context.Context) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "harn", Version: "1"}, &mcp.ClientOptions{
		Logger:                 c.b.log.With("mcp", c.cfg.Name),
		Capabilities:           &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.markDirty() },
	})
	var t mcp.Transport
	if c.cfg.isHTTP() {
		hc := &http.Client{Transport: &bearer{env: c.cfg.BearerTokenEnv, rt: http.DefaultTransport}}
		t = &mcp.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: hc, MaxRetries: 2, MaxEventSize: mcpMaxFrame}
	} else {
		st, err := c.startProcess()
		if err != nil {
			return err
		}
		t = st
	}
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		c.stopProcess()
		return fmt.Errorf("%w: %s: connect: %v", ErrServer, c.cfg.Name, err)
	}
	c.mu.Lock()
	c.sess = sess
	c.mu.Unlock()
	return c.refresh(ctx)
}

// startProcess starts a stdio server in its own process group, in the
// project folder, with its stderr logged (bounded lines).
func (c *mcpConn) startProcess() (mcp.Transport, error) {
	argv, err := c.cfg.argv()
	if err != nil {
		return nil, err
	}
	cmd, ready, err := procguard.Command(c.b.guard, argv)
	if err != nil {
		return nil, err
	}
	defer func() {
		if ready != nil {
			_ = ready.Close()
		}
	}()
	cmd.Dir = c.b.project
	if cmd.Env, err = mcpEnv(c.cfg.Name, c.cfg.Env); err != nil { // env.go: no secret it does not name
		return nil, err
	}
	cmd.Stderr = &logWriter{log: c.b.log, server: c.cfg.Name}
	cmd.WaitDelay = mcpStopGrace
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	waited, err := procguard.Start(cmd)
	procguard.Started(cmd)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: start %s: %v", ErrServer, c.cfg.Name, argv[0], err)
	}
	c.cmd, c.done = cmd, make(chan struct{})
	go func() {
		<-waited
		close(c.done)
	}()
	release, err := c.b.recordGroup(cmd.Process.Pid, ready)
	ready = nil // recordGroup closed it
	if err != nil {
		c.stopProcess()
		return nil, fmt.Errorf("%w: %s: %v", ErrServer, c.cfg.Name, err)
	}
	c.release = release
	return &mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: mcpMaxFrame}, nil
}

// stopProcess ends a stdio server: its stdin is closed (by the session's
// Close), then SIGTERM and SIGKILL to its group, each after a grace
// period; it returns once the process has been waited for.
func (c *mcpConn) stopProcess() {
	if c.cmd == nil {
		return
	}
	c.stopOnce.Do(c.stop)
}

func (c *mcpConn) stop() {
	defer func() {
		if c.release != nil {
			c.release()
		}
	}()
	pg := -c.cmd.Process.Pid
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		select {
		case <-c.done:
			_ = syscall.Kill(pg, syscall.SIGKILL) // what it left in its group
			return
		case <-time.After(mcpStopGrace): //clock:real a process stops in real time
		}
		_ = syscall.Kill(pg, sig)
	}
	<-c.done
}

func (c *mcpConn) close() {
	c.mu.Lock()
	s := c.sess
	c.sess = nil
	c.mu.Unlock()
	if s != nil {
		_ = s.Close()
	}
	c.stopProcess()
}

func (c *mcpConn) markDirty() {
	c.mu.Lock()
	c.dirty = true
	c.mu.Unlock()
	select {
	case c.b.wake <- struct{}{}:
	default:
	}
}

// refresh lists the server's tools (bounded) and keeps those with a
// valid schema.
func (c *mcpConn) refresh(ctx context.Context) error {
	c.mu.Lock()
	s := c.sess
	c.dirty = false
	c.mu.Unlock()
	if s == nil {
		return fmt.Errorf("%w: %s: not connected", ErrServer, c.cfg.Name)
	}
	var remote []*mcp.Tool
	cursor := ""
	for page := 0; page < mcpMaxPages && len(remote) < mcpMaxTools; page++ {
		r, err := s.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return fmt.Errorf("%w: %s: tools/list: %v", ErrServer, c.cfg.Name, err)
		}
		remote = append(remote, r.Tools...)
		if cursor = r.NextCursor; cursor == "" {
			break
		}
	}
	if len(remote) > mcpMaxTools {
		c.b.log.Warn("MCP server lists too many tools; the rest are dropped", "server", c.cfg.Name, "kept", mcpMaxTools, "listed", len(remote))
		remote = remote[:mcpMaxTools]
	}
	tools := map[string]*mcpTool{}
	for _, rt := range remote {
		t, err := c.toolOf(rt)
		if err != nil {
			c.b.log.Warn("MCP tool skipped", "server", c.cfg.Name, "tool", rt.Name, "err", err)
			continue
		}
		if _, dup := tools[t.name]; dup {
			c.b.log.Warn("MCP tool skipped: its name collides", "server", c.cfg.Name, "tool", rt.Name)
			continue
		}
		tools[t.name] = t
	}
	c.mu.Lock()
	c.tools = tools
	c.mu.Unlock()
	return nil
}

func (c *mcpConn) toolOf(rt *mcp.Tool) (*mcpTool, error) {
	name, ok := publishedName(c.cfg.Name, rt.Name)
	if !ok {
		return nil, fmt.Errorf("name %q too long or empty", rt.Name)
	}
	raw, err := json.Marshal(rt.InputSchema)
	if err != nil {
		return nil, err
	}
	var v map[string]any // canonical: sorted keys
	if err := json.Unmarshal(raw, &v); err != nil || v == nil {
		return nil, fmt.Errorf("input schema is not an object")
	}
	if typ, _ := v["type"].(string); typ != "object" {
		return nil, fmt.Errorf("input schema type is %v, not object", v["type"])
	}
	canon, _ := json.Marshal(v)
	if len(canon) > mcpMaxSchema {
		return nil, fmt.Errorf("input schema is %d bytes, over %d", len(canon), mcpMaxSchema)
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(canon, &js); err != nil {
		return nil, fmt.Errorf("input schema: %v", err)
	}
	res, err := js.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("input schema: %v", err)
	}
	desc := text.Sanitize(rt.Description) // it reaches the model, and discovery output may reach a terminal
	if len(desc) > mcpMaxDescription {
		desc = bound(desc, mcpMaxDescription)
	}
	return &mcpTool{name: name, remote: rt.Name, desc: desc, schema: canon, hash: Hash(canon), resolved: res}, nil
}

func (c *mcpConn) tool(name string) (*mcpTool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tools[name]
	return t, ok
}

func (c *mcpConn) list() []*mcpTool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*mcpTool, 0, len(c.tools))
	for _, t := range c.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// call runs one tools/call, bounded in time and reply size.
func (c *mcpConn) call(ctx context.Context, t *mcpTool, args json.RawMessage, maxOut int) (string, bool, error) {
	var in map[string]any
	if len(args) > MaxArgsBytes {
		return "", true, fmt.Errorf("%w: %d bytes", ErrBadArgs, len(args))
	}
	if s := strings.TrimSpace(string(args)); s != "" && s != "null" {
		if err := json.Unmarshal(args, &in); err != nil {
			return "", true, fmt.Errorf("%w: arguments must be a JSON object: %v", ErrBadArgs, err)
		}
	}
	if in == nil {
		in = map[string]any{}
	}
	if err := t.resolved.Validate(in); err != nil {
		return "", true, fmt.Errorf("%w: %v", ErrBadArgs, err)
	}
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	if s == nil {
		return "", true, fmt.Errorf("%w: %s: not connected", ErrServer, c.cfg.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, c.b.mcpTimeout)
	defer cancel()
	r, err := s.CallTool(ctx, &mcp.CallToolParams{Name: t.remote, Arguments: in})
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
			return "", true, fmt.Errorf("%w: %s after %s", ErrTimeout, t.name, c.b.mcpTimeout)
		}
		return "", true, fmt.Errorf("%w: %s: %v", ErrServer, c.cfg.Name, err)
	}
	return contentText(r, maxOut), r.IsError, nil
}

// contentText renders a result's content for the model, bounded.
func contentText(r *mcp.CallToolResult, maxOut int) string {
	var b strings.Builder
	for i, c := range r.Content {
		if i == mcpMaxContentItems {
			fmt.Fprintf(&b, "[%d more content items dropped]\n", len(r.Content)-i)
			break
		}
		if b.Len() > maxOut {
			break
		}
		switch v := c.(type) {
		case *mcp.TextContent:
			b.WriteString(v.Text)
			b.WriteByte('\n')
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d bytes]\n", v.MIMEType, len(v.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d bytes]\n", v.MIMEType, len(v.Data))
		default:
			if raw, err := json.Marshal(c); err == nil {
				b.Write(raw[:min(len(raw), maxOut)])
				b.WriteByte('\n')
			}
		}
	}
	if len(r.Content) == 0 && r.StructuredContent != nil {
		if raw, err := json.Marshal(r.StructuredContent); err == nil {
			b.Write(raw[:min(len(raw), maxOut+1)])
		}
	}
	return bound(b.String(), maxOut)
}

// bearer adds the token of an environment variable to each request.
type bearer struct {
	env string
	rt  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.env != "" {
		if tok := os.Getenv(b.env); tok != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	return b.rt.RoundTrip(r)
}

// logWriter logs a stdio server's stderr, a bounded line at a time.
type logWriter struct {
	log    interface{ Info(string, ...any) }
	server string
	mu     sync.Mutex
	n      int
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n < 1000 { // a chatty server does not flood the node's log
		w.n++
		w.log.Info("mcp server stderr", "server", w.server, "text", bound(strings.TrimRight(string(p), "\n"), 1024))
	}
	return len(p), nil
}

var _ io.Writer = (*logWriter)(nil)
