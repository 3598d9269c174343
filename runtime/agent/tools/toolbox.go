package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/procguard"
	"github.com/harn-dev/harn/util/safefs"
)

// DefaultCatalog is the runtime catalog a Toolbox publishes into unless
// Config.Catalog names another.
const DefaultCatalog = "harn"

// Config builds a Toolbox. A Toolbox serves one project: its skills and
// its MCP servers file are the project's.
type Config struct {
	Runtime *runtime.Runtime // required: where the catalog goes and every capability check is asked
	Catalog string           // the runtime catalog name (DefaultCatalog); sessions open with it
	Project string           // the project folder: stdio servers run here
	// ProjectFiles are the project's .harn files as the node's trust
	// check read them (skills/, mcp.json); nil: the project is not
	// trusted, and none of its skills or servers load. The box never
	// reads them from the project itself.
	ProjectFiles Files
	// SkillDirs replaces the default skills folders: the project's
	// skills (ProjectFiles), then UserSkillsDir(). The first of a name
	// wins.
	SkillDirs []string
	// MCP are the node's servers and the run's (--mcp), after the
	// project's file and the user's file: a later one of a name wins.
	MCP []MCPServer
	// NoMCPFiles skips the user's and the project's mcp.json.
	NoMCPFiles   bool
	Clock        clock.Clock   // default clock.Real
	Logger       *slog.Logger  // default: discard
	MaxOutput    int           // bytes of one result (DefaultMaxOutput)
	ShellTimeout time.Duration // DefaultShellTimeout
	ShellGrace   time.Duration // SIGINT → SIGKILL (DefaultShellGrace); keep it under the runtime's grace
	MCPTimeout   time.Duration // one MCP call (DefaultMCPTimeout)
	// Extra are tools of other rooms (the context's recall, the
	// subagents' agent and handoff) the box serves as core tools: always
	// loaded, published with the core, run by their own Run.
	Extra []Extra
	// Guard is the binary that leads a tool's process group (the shell's
	// commands, the stdio MCP servers) and kills it when the node dies
	// (util/procguard: the node's own binary). "": the command leads its
	// group itself, with SIGKILL as its parent death signal on Linux.
	Guard string
	// OnGroup, when set, is told each tool group before its command runs
	// (the node records it, to reap it at its next start should it die
	// first); a tool whose group cannot be recorded does not run. The func
	// it returns is called once the group is gone.
	OnGroup func(procguard.Group) (func(), error)
}

// Extra is a core tool another room provides. It is always in the
// catalog; Show, when set, says whether a task's requests list it (the
// agent tool only where the grants allow it, recall only once there is
// something to recall), so that a model is not shown a tool it cannot
// use yet.
type Extra struct {
	Spec    Spec
	Subject runtime.Subject
	Run     func(ctx context.Context, c Call) (Result, error)
	Show    func(session, task string) bool
}

// Toolbox is the Box of one node for one project: the core and discovery
// tools, the skills and the MCP servers, published as one runtime catalog.
// New does no I/O; Open reads the skills, starts the servers and publishes;
// Close stops them and waits. It is safe for concurrent use.
type Toolbox struct {
	rt           *runtime.Runtime
	catalog      string
	project      string
	files        Files // the project's trusted .harn files, nil: untrusted
	skillDirs    []string
	servers      []MCPServer
	noFiles      bool
	clock        clock.Clock
	log          *slog.Logger
	maxOut       int
	shellTimeout time.Duration
	shellGrace   time.Duration
	mcpTimeout   time.Duration
	extra        []Extra
	guard        string
	onGroup      func(procguard.Group) (func(), error)

	wake   chan struct{} // a server's tool list changed
	cancel context.CancelFunc
	wg     sync.WaitGroup

	pubMu sync.Mutex // serializes catalog publications
	gen   uint64

	mu     sync.Mutex
	opened bool
	closed bool
	skills map[string]Skill
	conns  []*mcpConn
	tasks  map[string]*taskState
}

// taskState is what one task loaded through this box.
type taskState struct {
	loaded    []loadedTool    // in the order tools_load admitted them
	fresh     map[string]bool // skills the model activated in the step now running
	withdrawn []string        // notes for the model: loaded tools whose server changed them
}

// maxWithdrawn bounds the withdrawal notes a task keeps.
const maxWithdrawn = 32

type loadedTool struct {
	name, hash, provider string
}

var _ Box = (*Toolbox)(nil)

// New builds a Toolbox; it does no I/O.
func New(cfg Config) (*Toolbox, error) {
	if cfg.Runtime == nil {
		return nil, fmt.Errorf("%w: a runtime is required", ErrConfig)
	}
	for _, s := range cfg.MCP {
		if err := s.validate(); err != nil {
			return nil, err
		}
	}
	for _, x := range cfg.Extra {
		if x.Run == nil || x.Spec.Name == "" || isBuiltin(x.Spec.Name) {
			return nil, fmt.Errorf("%w: extra tool %q needs a name of its own and a Run", ErrConfig, x.Spec.Name)
		}
	}
	b := &Toolbox{rt: cfg.Runtime, catalog: cfg.Catalog, project: cfg.Project, files: cfg.ProjectFiles, skillDirs: cfg.SkillDirs,
		servers: cfg.MCP, noFiles: cfg.NoMCPFiles, clock: cfg.Clock, log: cfg.Logger, maxOut: cfg.MaxOutput,
		shellTimeout: cfg.ShellTimeout, shellGrace: cfg.ShellGrace, mcpTimeout: cfg.MCPTimeout, extra: append([]Extra(nil), cfg.Extra...),
		guard: cfg.Guard, onGroup: cfg.OnGroup,
		wake: make(chan struct{}, 1), skills: map[string]Skill{}, tasks: map[string]*taskState{}}
	if b.catalog == "" {
		b.catalog = DefaultCatalog
	}
	if b.clock == nil {
		b.clock = clock.Real{}
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.maxOut <= 0 {
		b.maxOut = DefaultMaxOutput
	}
	if b.shellTimeout <= 0 {
		b.shellTimeout = DefaultShellTimeout
	}
	if b.shellGrace <= 0 {
		b.shellGrace = DefaultShellGrace
	}
	if b.mcpTimeout <= 0 {
		b.mcpTimeout = DefaultMCPTimeout
	}
	return b, nil
}

// Catalog names the runtime catalog the box publishes; a session of harn's
// loop opens with it (runtime.SessionConfig.Catalog).
func (b *Toolbox) Catalog() string { return b.catalog }

// Open reads the skills, starts the MCP servers (connect, initialize,
// tools/list) and publishes the catalog. A server that fails to start is
// left out and named in the returned error (joined, one per server, each
// wrapping ErrServer or ErrConfig); the box works without it, so the
// caller decides whether that is fatal (harn ask: yes; a node: a warning).
func (b *Toolbox) Open(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	if b.opened {
		b.mu.Unlock()
		return nil
	}
	b.opened = true
	b.mu.Unlock()

	var errs []error
	skills := b.loadSkills()
	servers := b.servers
	if !b.noFiles {
		var lists [][]MCPServer
		if f := UserMCPFile(); f != "" {
			l, err := LoadMCPFile(f)
			if err != nil {
				errs = append(errs, err)
			}
			lists = append(lists, l)
		}
		if b.files != nil {
			l, err := projectServers(b.files, ProjectMCPFile(b.project))
			if err != nil {
				errs = append(errs, err)
			}
			lists = append(lists, l)
		}
		servers = mergeServers(append(lists, b.servers)...)
	}
	var conns []*mcpConn
	for _, s := range servers {
		c := &mcpConn{b: b, cfg: s, provider: MCPPrefix + s.Name}
		cctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
		err := c.connect(cctx)
		cancel()
		if err != nil {
			c.close()
			errs = append(errs, err)
			continue
		}
		conns = append(conns, c)
	}
	rctx, cancel := context.WithCancel(context.Background())
	b.mu.Lock()
	if b.closed { // Close ran while the servers started: they are ours to stop
		b.mu.Unlock()
		cancel()
		for _, c := range conns {
			c.close()
		}
		return ErrClosed
	}
	for _, s := range skills {
		b.skills[s.Name] = s
	}
	b.conns = conns
	b.cancel = cancel
	b.mu.Unlock()
	if err := b.publish(); err != nil {
		errs = append(errs, err)
	}
	b.wg.Add(1)
	go b.refresher(rctx)
	return errors.Join(errs...)
}

// loadSkills reads the skills: Config.SkillDirs when set, else the
// trusted project's, then the user's.
func (b *Toolbox) loadSkills() []Skill {
	if b.skillDirs != nil {
		return LoadSkills(b.skillDirs, b.log)
	}
	var srcs []SkillSource
	if b.files != nil {
		srcs = append(srcs, SkillSource{Files: b.files, Sub: "skills", Dir: filepath.Join(b.project, ".harn", "skills")})
	}
	if d := UserSkillsDir(); d != "" {
		if sd, err := safefs.Open(d); err == nil {
			defer sd.Close()
			srcs = append(srcs, SkillSource{Files: sd, Sub: ".", Dir: d})
		}
	}
	return LoadSkillsFrom(srcs, b.log)
}

// projectServers are the servers of a trusted project's mcp.json (name
// is its path, for errors); none when it has none.
func projectServers(files Files, name string) ([]MCPServer, error) {
	data, err := files.ReadFile("mcp.json", maxMCPFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
	}
	return ParseMCP(data, name)
}

// Servers names the MCP servers Open connected, in the order it started
// them (a server that failed to start is absent).
func (b *Toolbox) Servers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.conns))
	for _, c := range b.conns {
		out = append(out, c.cfg.Name)
	}
	return out
}

// Close stops the MCP servers and waits for them and for the refresher.
// It is safe to call twice.
func (b *Toolbox) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	cancel, conns := b.cancel, b.conns
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	b.wg.Wait()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.close()
		}()
	}
	wg.Wait()
	return nil
}

// refresher re-lists the tools of the servers that said their list
// changed and publishes a new catalog generation.
func (b *Toolbox) refresher(ctx context.Context) {
	defer b.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
		b.mu.Lock()
		conns := b.conns
		b.mu.Unlock()
		for _, c := range conns {
			c.mu.Lock()
			d := c.dirty
			c.mu.Unlock()
			if !d {
				continue
			}
			lctx, cancel := context.WithTimeout(ctx, mcpListTimeout)
			if err := c.refresh(lctx); err != nil {
				b.log.Warn("MCP tool list refresh failed; the old list stays", "server", c.cfg.Name, "err", err)
			}
			cancel()
		}
		if err := b.publish(); err != nil {
			b.log.Warn("catalog publish failed", "err", err)
		}
	}
}

// Capabilities is the catalog the box publishes: core tools, discovery
// tools, skills, then every server's tools, each part in a stable order.
func (b *Toolbox) Capabilities() []runtime.Capability {
	var caps []runtime.Capability
	for _, t := range coreTools {
		caps = append(caps, t.capability())
	}
	for _, t := range discoveryTools {
		caps = append(caps, t.capability())
	}
	for _, x := range b.extra {
		caps = append(caps, builtin{spec: x.Spec, subject: x.Subject}.capability())
	}
	b.mu.Lock()
	names := make([]string, 0, len(b.skills))
	for n := range b.skills {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := b.skills[n]
		caps = append(caps, runtime.Capability{Name: s.Name, Kind: runtime.KindSkill, Description: s.Description,
			ContractHash: s.Hash, Provider: ProviderSkills, ReadOnly: true, Tokens: EstimateTokens(s.Name, s.Body)})
	}
	conns := b.conns
	b.mu.Unlock()
	seen := map[string]bool{}
	for _, c := range caps {
		seen[c.Name] = true
	}
	for _, c := range conns {
		for _, t := range c.list() {
			if seen[t.name] {
				continue
			}
			seen[t.name] = true
			caps = append(caps, runtime.Capability{Name: t.name, Kind: runtime.KindTool, Description: t.desc,
				ContractHash: t.hash, Provider: c.provider, ReadOnly: t.readOnly,
				Tokens: EstimateTokens(t.name, t.desc, string(t.schema))})
		}
	}
	return caps
}

// publish sets a new generation of the catalog.
func (b *Toolbox) publish() error {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	gen, err := b.rt.SetCatalog(b.catalog, b.Capabilities())
	if err != nil {
		return err
	}
	b.gen = gen
	return nil
}

// Generation is the catalog generation the box published last.
func (b *Toolbox) Generation() uint64 {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	return b.gen
}

func isBuiltin(name string) bool {
	_, ok := builtinByName[name]
	return ok
}

var builtinByName = func() map[string]builtin {
	m := map[string]builtin{}
	for _, t := range append(append([]builtin(nil), coreTools...), discoveryTools...) {
		m[t.spec.Name] = t
	}
	return m
}()

func (b *Toolbox) state(task string) *taskState {
	b.mu.Lock()
	defer b.mu.Unlock()
	ts := b.tasks[task]
	if ts == nil {
		if len(b.tasks) >= 1024 {
			b.pruneLocked()
		}
		ts = &taskState{fresh: map[string]bool{}}
		b.tasks[task] = ts
	}
	return ts
}

// pruneLocked forgets the tasks the runtime says have ended.
func (b *Toolbox) pruneLocked() {
	for id := range b.tasks {
		if v, err := b.rt.Task(id); err != nil || v.State == runtime.StateTerminal {
			delete(b.tasks, id)
		}
	}
}

// EndTask forgets what a task loaded; the loop calls it when the task
// ends (the box also forgets ended tasks on its own once it holds many).
func (b *Toolbox) EndTask(task string) {
	b.mu.Lock()
	delete(b.tasks, task)
	b.mu.Unlock()
}

func (b *Toolbox) mcpTool(name string) (*mcpConn, *mcpTool, bool) {
	if !strings.HasPrefix(name, "mcp__") {
		return nil, nil, false
	}
	b.mu.Lock()
	conns := b.conns
	b.mu.Unlock()
	for _, c := range conns {
		if t, ok := c.tool(name); ok {
			return c, t, true
		}
	}
	return nil, nil, false
}

// Specs are core, discovery, then what tools_load admitted for the task,
// in load order. A loaded MCP tool its server changed (or no longer
// offers) since the task loaded it is withdrawn (reconcile): the task's
// snapshot holds the old contract, so it could not be called.
func (b *Toolbox) Specs(session, task string) []Spec {
	out := append(CoreSpecs(), DiscoverySpecs()...)
	for _, x := range b.extra {
		if x.Show == nil || x.Show(session, task) {
			out = append(out, x.Spec)
		}
	}
	for _, l := range b.reconcile(task) {
		c, t, _ := b.mcpTool(l.name)
		out = append(out, Spec{Name: t.name, Description: t.desc, Schema: t.schema, Mutating: !t.readOnly, Provider: c.provider, Hash: t.hash})
	}
	return out
}

// reconcile withdraws from the task every loaded MCP tool its server no
// longer offers with the contract the task loaded: the task's snapshot
// holds the old contract, so the tool could not be called again in this
// task, and a request must not offer it. Each withdrawal is unloaded in
// the runtime (its tokens freed) and leaves a note for the model in
// Instructions. It returns the loaded tools still offered, in load order.
func (b *Toolbox) reconcile(task string) []loadedTool {
	ts := b.state(task)
	b.mu.Lock()
	loaded := append([]loadedTool(nil), ts.loaded...)
	b.mu.Unlock()
	var keep []loadedTool
	var gone, names []string // notes, and the names withdrawn
	for _, l := range loaded {
		c, t, ok := b.mcpTool(l.name)
		switch {
		case !ok:
			gone = append(gone, fmt.Sprintf("%s was withdrawn from this task: its MCP server no longer offers it.", l.name))
		case t.hash != l.hash || c.provider != l.provider:
			gone = append(gone, fmt.Sprintf("%s was withdrawn from this task: its MCP server changed its schema after this task loaded it. "+
				"This task cannot call it; a later task (a follow-up) can load it with the new schema.", l.name))
		default:
			keep = append(keep, l)
			continue
		}
		names = append(names, l.name)
		_ = b.rt.Unload(task, l.name)
		b.log.Info("MCP tool withdrawn from a task: its contract changed", "task", task, "tool", l.name)
	}
	if len(gone) > 0 {
		b.mu.Lock()
		ts.loaded = slices.DeleteFunc(ts.loaded, func(l loadedTool) bool { return slices.Contains(names, l.name) })
		for _, g := range gone {
			if len(ts.withdrawn) < maxWithdrawn && !slices.Contains(ts.withdrawn, g) {
				ts.withdrawn = append(ts.withdrawn, g)
			}
		}
		b.mu.Unlock()
	}
	return keep
}

// Run runs one call the loop's pre-call check allowed. The Result is
// always set; the error is non-nil exactly when Result.IsError is, and
// wraps what went wrong (ErrBadArgs, ErrNoMatch,
// ErrAmbiguous, ErrOutsideWorkdir, ErrTimeout, ErrNotLoaded,
// ErrContractChanged, ErrServer, a runtime refusal, or ctx's error when the
// call was cancelled).
func (b *Toolbox) Run(ctx context.Context, c Call) (Result, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return fail(ErrClosed, b.maxOut)
	}
	var (
		out string
		err error
	)
	switch c.Name {
	case ToolRead:
		out, err = b.runRead(c.Dir, c.Args)
	case ToolWrite:
		out, err = b.runWrite(c.Dir, c.Args)
	case ToolEdit:
		out, err = b.runEdit(c.Dir, c.Args)
	case ToolShell:
		out, err = b.runShell(ctx, c.Dir, c.Args)
	case ToolGrep:
		out, err = b.runGrep(c.Dir, c.Args)
	case ToolGlob:
		out, err = b.runGlob(c.Dir, c.Args)
	case ToolList, ToolSearch, ToolInsp, ToolLoad, ToolSkill:
		out, err = b.runDiscovery(c)
	default:
		for _, x := range b.extra {
			if x.Spec.Name == c.Name {
				return x.Run(ctx, c)
			}
		}
		return b.runMCP(ctx, c)
	}
	if err != nil {
		if out != "" {
			return Result{Content: bound(out+"\n["+err.Error()+"]", b.maxOut), IsError: true}, err
		}
		return fail(err, b.maxOut)
	}
	return Result{Content: bound(out, b.maxOut)}, nil
}

func fail(err error, n int) (Result, error) {
	return Result{Content: bound(err.Error(), n), IsError: true}, err
}

func (b *Toolbox) runMCP(ctx context.Context, c Call) (Result, error) {
	ts := b.state(c.Task)
	b.mu.Lock()
	var l *loadedTool
	for i := range ts.loaded {
		if ts.loaded[i].name == c.Name {
			l = &ts.loaded[i]
		}
	}
	b.mu.Unlock()
	if l == nil {
		if _, _, ok := b.mcpTool(c.Name); ok {
			return fail(fmt.Errorf("%w: %s: %s", ErrNotLoaded, c.Name, runtime.LoadFirst(c.Name)), b.maxOut)
		}
		return fail(fmt.Errorf("%w: %s", ErrUnknownTool, c.Name), b.maxOut)
	}
	if slices.Contains(b.rt.Overrides().Disabled, "mcp") {
		// The provider of external agents' MCP tools: switching it off
		// stops harn's MCP servers too, not only each mcp:NAME.
		return fail(fmt.Errorf("%w: provider \"mcp\" is disabled, and with it every MCP server", runtime.ErrProviderDisabled), b.maxOut)
	}
	conn, t, ok := b.mcpTool(c.Name)
	if !ok {
		return fail(fmt.Errorf("%w: %s is no longer offered by its server", ErrContractChanged, c.Name), b.maxOut)
	}
	if t.hash != l.hash || conn.provider != l.provider {
		return fail(fmt.Errorf("%w: %s (loaded %s from %s, now %s from %s); the task cannot call it", ErrContractChanged, c.Name, short(l.hash), l.provider, short(t.hash), conn.provider), b.maxOut)
	}
	out, isErr, err := conn.call(ctx, t, c.Args, b.maxOut)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %v", ctx.Err(), err)
		}
		return fail(err, b.maxOut)
	}
	if isErr {
		return Result{Content: out, IsError: true}, fmt.Errorf("%w: %s answered with an error", ErrServer, c.Name)
	}
	return Result{Content: out}, nil
}

func short(h string) string { return h[:min(len(h), 12)] }
