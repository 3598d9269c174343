package node

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/harn-dev/harn/node/heartbeat"
	"github.com/harn-dev/harn/node/hosted/hostedsvc"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/remotepolicy"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/runtime/exec"
	"github.com/harn-dev/harn/util/clock"
)

// Config configures a Node. Build it with DefaultConfig and change fields.
type Config struct {
	// DataDir holds ledger/, spool/, active/ and node.key.
	DataDir string
	// Socket is the unix socket of the local API (the local wire).
	Socket string
	// Name is the node's name in the mesh (default: the hostname).
	Name string
	// Version is reported by Status.
	Version string

	// ReapInterval is how often the node checks that the agent processes
	// of live sessions still exist.
	ReapInterval time.Duration
	// SpoolInterval is how often the node drains the spool while running.
	SpoolInterval time.Duration
	// ProjectDelay coalesces heartbeat writes: a heartbeat lags its
	// session's state by at most this much, and a burst of events costs
	// one write per session.
	ProjectDelay time.Duration
	// SilenceAfter is how long a working session may show no evidence
	// before readers mark it silent (silent_since). Elapsed time never
	// changes its activity.
	SilenceAfter time.Duration
	// PeerContextBytes caps the prompt-time peer context (the most
	// relevant sessions first, then "and N more").
	PeerContextBytes int

	Logger *slog.Logger
	Clock  clock.Clock
	// Procs checks agent processes (nil: /proc).
	Procs ProcChecker
	// Git runs the git finalization check (nil: the git CLI).
	Git GitChecker
	// TracerProvider traces ingest and the gRPC calls (nil: off; see
	// node/tracing).
	TracerProvider trace.TracerProvider
	// LogPrompts records the prompt text of harn's provider requests in
	// their GenAI spans (gen_ai.input.messages); off by default, as no
	// prompt should leave the node unless its operator says so.
	LogPrompts bool
	// NoCompaction is compaction.enabled = false: harn sessions take the
	// deterministic fallback only, once over budget, unless a run asks
	// for LLM compaction (harn ask --compaction).
	NoCompaction bool
	// AgentBounds limit what a model can make harn's own agent hold or do
	// (zero fields take the defaults; agent.Bounds).
	AgentBounds AgentBounds
	// ToolGuard is the binary that leads the process group of each tool
	// harn's agent runs, so that it dies with the node (util/procguard:
	// harnd itself, which runs a guard when given procguard.Arg). "": the
	// command leads its group itself.
	ToolGuard string

	// Claims is the write-claim mode: off, warn or enforce ("" is
	// enforce).
	Claims string

	// Launchers are the named agent commands a task start may name
	// (--launcher, [launchers] in the config file); Cluster.RemoteExec
	// says which of them other nodes may start.
	Launchers tasks.Launchers

	// Cluster configures the mesh: gossip, the Raft registry and the
	// cluster gRPC service.
	Cluster ClusterConfig

	// Hosted configures the hosting room (node/hosted/hostedsvc).
	Hosted hostedsvc.Config

	// Provider is the node's own model provider (--provider,
	// --provider-url, HARN_PROVIDER_KEY or --provider-key-file,
	// --provider-models): every harn session another node starts runs
	// with it, and the node's key goes to its URL only. Remote says what
	// a caller on another node may choose (remote_policy.go): its
	// Profiles (--remote-profiles) and Workspaces (--workspace); the node
	// adds its name, provider and private paths. SecretFiles are the
	// node's secret files outside its data dir (key and token files, the
	// config file): no remote workdir holds one.
	Provider    tasks.Provider
	Remote      remotepolicy.Config
	SecretFiles []string

	// ledgerTune adjusts the ledger's config before it opens (tests inject
	// a faulty file system).
	ledgerTune func(*ledger.Config)
	// noPortCheck skips Open's check of every port before anything opens
	// (tests of a listener that fails deep in Open, as one taken between
	// the check and its bind does).
	noPortCheck bool

	// HTTPAddr is where the web board and /metrics listen (host:port, see
	// ParseHTTPAddr); empty serves neither. HTTPToken is the token they
	// require, on loopback too; when empty, one is generated into the
	// data dir (WebTokenPath).
	HTTPAddr, HTTPToken string
	// Web bounds the board's listener and sets the scrape-only token
	// (web.go).
	Web WebConfig

	// Notify configures notifications (notifywire.go).
	Notify NotifyConfig

	// OnTaskFirstByte, when set, is told the start→first byte metric of
	// every task the node's runtime sessions run (tasks.Config.OnFirstByte):
	// benchmarks observe the executor's first byte with it. It runs on the
	// executor's goroutine and must not block.
	OnTaskFirstByte func(exec.FirstByte)
}

// DefaultConfig returns the embedded defaults: the XDG state dir, the socket
// in the runtime dir, the hostname as name.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	dd := DefaultDataDir()
	return Config{
		DataDir:          dd,
		Socket:           DefaultSocket(dd),
		Name:             host,
		ReapInterval:     2 * time.Second,
		SpoolInterval:    time.Second,
		ProjectDelay:     20 * time.Millisecond,
		SilenceAfter:     DefaultSilenceAfter,
		PeerContextBytes: DefaultPeerContextBytes,
		Logger:           slog.Default(),
		Clock:            clock.Real{},
		Cluster:          DefaultClusterConfig(),
		Hosted:           hostedsvc.Config{Max: hostedsvc.DefaultMax},
		Notify:           NotifyConfig{Desktop: true},
		Remote:           remotepolicy.DefaultConfig(),
	}
}

// Defaults of the roster's silence and of the peer context's cap.
const (
	DefaultSilenceAfter     = layout.DefaultSilenceAfter
	DefaultPeerContextBytes = layout.DefaultPeerContextBytes
	// minPeerContextBytes leaves room for a header, one row and the
	// "and N more" line.
	minPeerContextBytes = 512
)

// AgentBounds are the bounds of harn's own agent on a model's output
// (--agent.max-answer-bytes, --agent.max-tool-calls, --agent.max-steps,
// --agent.tool-preview-bytes).
type AgentBounds = agent.Bounds

// Errors of configuration and startup.
var (
	ErrConfig = layout.ErrConfig
	ErrLocked = errors.New("another harn node is running on this data dir")
)

// Validate checks the Config.
func (c Config) Validate() error {
	switch {
	case c.DataDir == "":
		return fmt.Errorf("%w: data-dir is empty; pass --data-dir or set HARN_DATA_DIR", ErrConfig)
	case c.Socket == "":
		return fmt.Errorf("%w: socket is empty; pass --socket or set HARN_SOCKET", ErrConfig)
	case len(c.Socket) > 104:
		return fmt.Errorf("%w: socket path %q is longer than 104 bytes; pass a shorter --socket", ErrConfig, c.Socket)
	case c.Name == "":
		return fmt.Errorf("%w: name is empty; pass --name", ErrConfig)
	case c.ReapInterval <= 0 || c.SpoolInterval <= 0 || c.ProjectDelay < 0:
		return fmt.Errorf("%w: intervals must be positive", ErrConfig)
	case c.SilenceAfter <= 0:
		return fmt.Errorf("%w: silence-after must be positive; pass --silence-after 5m", ErrConfig)
	case c.PeerContextBytes < minPeerContextBytes:
		return fmt.Errorf("%w: peer-context-bytes %d is below %d; pass a larger --peer-context-bytes", ErrConfig, c.PeerContextBytes, minPeerContextBytes)
	case c.Logger == nil || c.Clock == nil:
		return fmt.Errorf("%w: Logger and Clock are required", ErrConfig)
	}
	if err := c.Remote.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.AgentBounds.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.Hosted.Validate(); err != nil {
		return err
	}
	return c.Cluster.Validate()
}

// Paths inside the data dir.
func (c Config) ledgerDir() string { return filepath.Join(c.DataDir, "ledger") }

func (c Config) lockPath() string { return filepath.Join(c.DataDir, "node.lock") }

// HeartbeatPath is the heartbeat file of a session.
func HeartbeatPath(dataDir, session string) string {
	return filepath.Join(ActiveDir(dataDir), heartbeat.FileName(session))
}
