package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/util/secretfile"
	"github.com/harn-dev/harn/util/text"
)

// ErrConfigFile wraps a config file that cannot be read or parsed.
var ErrConfigFile = errors.New("bad config file")

// EnvName is the environment variable that backs a flag: HARN_ plus the
// flag in upper case, dashes and dots as underscores (compaction.enabled:
// HARN_COMPACTION_ENABLED).
func EnvName(flag string) string {
	return "HARN_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(flag))
}

// applySettings fills every flag of c that was not set on the command
// line, first from its environment variable, then from the config file;
// what is left keeps its default. So the precedence is flag, environment,
// config file, default.
func ApplySettings(c *cobra.Command) error {
	// A bad config file is reported, but the environment still applies,
	// so that a hook going on after the error still finds its node.
	file, cerr := LoadConfigFile(c)
	var ferr error
	visit := func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" || f.Name == "config" || len(f.Annotations[annotCommandLineOnly]) > 0 {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if sv, whole := f.Value.(pflag.SliceValue); whole && wholeValue(f) {
				if err := sv.Replace([]string{v}); err != nil && ferr == nil {
					ferr = UsageErr(fmt.Errorf("%s=%q: %v; fix or unset it", EnvName(f.Name), v, err))
				}
				return
			}
			if err := SetFlag(c, f, v); err != nil && ferr == nil {
				ferr = UsageErr(fmt.Errorf("%s=%q: %v; fix or unset it", EnvName(f.Name), v, err))
			}
			return
		}
		if v, ok := file.Lookup(f.Name); ok {
			if err := SetFlag(c, f, v); err != nil && ferr == nil {
				ferr = UsageErr(fmt.Errorf("config %s: key %q: %v", file.path, f.Name, err))
			}
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	if cerr != nil {
		var ie *secretfile.InsecureFileError
		if errors.As(cerr, &ie) {
			return WithCode(ExitPermission, cerr)
		}
		return UsageErr(cerr)
	}
	return ferr
}

// annotWritesConfig marks a command that writes the config file (harn
// mesh init): a config file it is named (--config, HARN_CONFIG) that does
// not exist yet reads as empty, and the command makes it.
const AnnotWritesConfig = "harn-writes-config"

// writesConfig says whether c writes the config file it reads.
func writesConfig(c *cobra.Command) bool { return c.Annotations[AnnotWritesConfig] != "" }

// annotCommandLineOnly marks a flag that applySettings never fills from the
// environment or the config file: a choice that must be made on the
// command itself (the role of a join token: `server = true` in the config
// of a build box must not make `harn token create` issue server tokens).
const annotCommandLineOnly = "harn-command-line-only"

// commandLineOnly marks c's flag name as read from the command line only.
func CommandLineOnly(c *cobra.Command, name string) {
	if err := c.Flags().SetAnnotation(name, annotCommandLineOnly, []string{"true"}); err != nil {
		panic(err) // a programming error: no such flag
	}
}

func SetFlag(c *cobra.Command, f *pflag.Flag, v string) error {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		parts := strings.Split(v, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return sv.Replace(parts)
	}
	if err := f.Value.Set(v); err != nil {
		return err
	}
	f.Changed = false
	return nil
}

type ConfigFile struct {
	path       string
	vals       map[string]string
	Launchers  taskwire.Launchers
	Workspaces []string
}

func (f ConfigFile) Lookup(flag string) (string, bool) {
	if f.vals == nil {
		return "", false
	}
	if v, ok := f.vals[flag]; ok {
		return v, true
	}
	v, ok := f.vals[strings.ReplaceAll(flag, "-", "_")]
	return v, ok
}

// loadConfigFile reads --config, else HARN_CONFIG, else the default
// $XDG_CONFIG_HOME/harn/config.json when it exists. The file is a JSON
// object of flag names, or lines of `key = value` (# starts a comment).
func LoadConfigFile(c *cobra.Command) (ConfigFile, error) {
	path, explicit, _ := ConfigPath(c)
	if path == "" {
		return ConfigFile{}, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && (!explicit || writesConfig(c)) {
			return ConfigFile{}, nil
		}
		return ConfigFile{}, fmt.Errorf("%w %s: %v", ErrConfigFile, path, err)
	}
	parsed, err := ParseConfigFile(b)
	if err != nil {
		return ConfigFile{}, fmt.Errorf("%w %s: %v", ErrConfigFile, path, err)
	}
	vals := parsed.vals
	// A config that holds a secret is refused whole when others may read
	// it, as ssh refuses a private key.
	if secrets := secretKeys(vals); len(secrets) > 0 {
		if err := secretfile.Check(path); err != nil {
			return ConfigFile{}, &secretFileError{what: "config " + path + " holds " + strings.Join(secrets, ", "), err: err}
		}
	}
	return ConfigFile{path: path, vals: vals, Launchers: parsed.launchers, Workspaces: parsed.workspaces}, nil
}

// secretKeys lists, sorted, the keys of a config whose values are secrets.
func secretKeys(vals map[string]string) []string {
	var out []string
	for k := range vals {
		if IsSecretKey(k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// secretFileError is a secret file refused: what it holds, and why (a
// *secretfile.InsecureFileError, or the error reading it).
type secretFileError struct {
	what string
	err  error
}

func (e *secretFileError) Error() string {
	var ie *secretfile.InsecureFileError
	if errors.As(e.err, &ie) {
		msg := fmt.Sprintf("%s and is %s (mode %04o)", e.what, ie.Why, ie.Mode.Perm())
		if ie.Fix != "" {
			msg += "; run " + ie.Fix
		}
		return msg
	}
	return e.what + ": " + e.err.Error()
}

func (e *secretFileError) Unwrap() error { return e.err }

// maxSecretFile bounds a secret file (a key, a token).
const MaxSecretFile = 64 << 10

// readSecretFile reads a secret (a gossip key, a join token) from a file so
// that it stays out of the process list. The file must be a regular file of
// this user that group and others cannot read or write, as ssh requires of
// a private key; its content, trimmed of surrounding white space, must not
// be empty. Every error carries ExitPermission and is one line naming the
// fix.
func ReadSecretFile(path string) (string, error) {
	fail := func(err error) (string, error) {
		return "", WithCode(ExitPermission, &secretFileError{what: "secret file " + text.OneLine(path), err: err})
	}
	if err := secretfile.Check(path); err != nil {
		var ie *secretfile.InsecureFileError
		if errors.As(err, &ie) {
			return fail(err)
		}
		return fail(errors.Unwrap(err)) // the stat error, without trust's prefix
	}
	f, err := os.Open(path)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretFile+1))
	if err != nil {
		return fail(err)
	}
	if len(b) > MaxSecretFile {
		return fail(fmt.Errorf("%w: it is over %d bytes; a secret file holds one key or token", ErrSecretFile, MaxSecretFile))
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return fail(fmt.Errorf("%w: it is empty; write the secret into it", ErrSecretFile))
	}
	return s, nil
}

// ErrSecretFile wraps a secret file whose content is unusable.
var ErrSecretFile = errors.New("cli: bad secret file")

// addSecretFileFlags adds the flags that read secrets from files.
func AddSecretFileFlags(c *cobra.Command) {
	c.Flags().String("gossip-key-file", "", "file holding the gossip key (mode 0600; keeps the key out of ps)")
}

// parseConfig reads a config file's flag values (parseConfigFile without
// its launchers).
func ParseConfig(b []byte) (map[string]string, error) {
	c, err := ParseConfigFile(b)
	return c.vals, err
}

// parsedConfig is a config file's content: flag values by key, the
// launchers of its [launchers] section (JSON: its "launchers" object) and
// the directories of its [workspaces] section (JSON: "workspaces").
type parsedConfig struct {
	vals       map[string]string
	launchers  taskwire.Launchers
	workspaces []string
}

// parseConfigFile reads a config file: a JSON object of flag names (and
// "launchers": {"NAME": ["argv", ...]}, "workspaces": ["DIR", ...]), or
// lines of `key = value`, where a `[launchers]` line starts the section
// of `NAME = ["argv", ...]` lines and a `[workspaces]` line the section
// of one directory a line; a section runs to the next one or the end of
// the file (# starts a comment line).
func ParseConfigFile(b []byte) (parsedConfig, error) {
	s := strings.TrimSpace(string(b))
	out := parsedConfig{vals: map[string]string{}}
	if strings.HasPrefix(s, "{") {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return parsedConfig{}, fmt.Errorf("not valid JSON: %v", err)
		}
		for k, v := range m {
			if k == "launchers" {
				l, err := jsonLaunchers(v)
				if err != nil {
					return parsedConfig{}, err
				}
				out.launchers = l
				continue
			}
			if k == "workspaces" {
				w, err := jsonWorkspaces(v)
				if err != nil {
					return parsedConfig{}, err
				}
				out.workspaces = w
				continue
			}
			switch x := v.(type) {
			case string:
				out.vals[k] = x
			case []any:
				var parts []string
				for _, p := range x {
					parts = append(parts, fmt.Sprint(p))
				}
				out.vals[k] = strings.Join(parts, ",")
			default:
				out.vals[k] = fmt.Sprint(x)
			}
		}
		return out, nil
	}
	section := ""
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			name, ok := strings.CutSuffix(line, "]")
			name = strings.TrimSpace(strings.TrimPrefix(name, "["))
			if !ok || (name != "launchers" && name != "workspaces") {
				return parsedConfig{}, fmt.Errorf("line %d: unknown section %q; the sections are [launchers] and [workspaces]", i+1, text.Clip(text.OneLine(line), 40))
			}
			if (name == "launchers" && out.launchers != nil) || (name == "workspaces" && out.workspaces != nil) {
				return parsedConfig{}, fmt.Errorf("line %d: a second [%s] section; keep one", i+1, name)
			}
			section = name
			if name == "launchers" {
				out.launchers = taskwire.Launchers{}
			} else {
				out.workspaces = []string{}
			}
			continue
		}
		if section == "workspaces" {
			if err := addWorkspace(&out.workspaces, line); err != nil {
				return parsedConfig{}, fmt.Errorf("line %d: %w", i+1, err)
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok && section == "" {
			k, v, ok = strings.Cut(line, ":")
		}
		if !ok {
			if section != "" {
				return parsedConfig{}, fmt.Errorf("line %d: want NAME = [\"argv\", ...] in [launchers]", i+1)
			}
			return parsedConfig{}, fmt.Errorf("line %d: want key = value", i+1)
		}
		k = strings.TrimSpace(k)
		if k == "" {
			return parsedConfig{}, fmt.Errorf("line %d: the key is empty; want key = value", i+1)
		}
		if section == "launchers" {
			if err := addLauncher(out.launchers, k, strings.TrimSpace(v)); err != nil {
				return parsedConfig{}, fmt.Errorf("line %d: %w", i+1, err)
			}
			continue
		}
		out.vals[k] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	return out, nil
}

// addLauncher adds one `NAME = ["argv", ...]` line of [launchers] to l.
func addLauncher(l taskwire.Launchers, name, value string) error {
	if err := taskwire.ValidLauncherName(name); err != nil {
		return err
	}
	if _, dup := l[name]; dup {
		return fmt.Errorf("%w: launcher %s is defined twice; keep one", taskwire.ErrBadLauncher, name)
	}
	if len(l) >= taskwire.MaxLaunchers {
		return fmt.Errorf("%w: over %d launchers", taskwire.ErrBadLauncher, taskwire.MaxLaunchers)
	}
	var argv []string
	if err := json.Unmarshal([]byte(value), &argv); err != nil {
		return fmt.Errorf("%w: launcher %s: want NAME = [\"argv\", ...] (a JSON array of strings)", taskwire.ErrBadLauncher, name)
	}
	if err := taskwire.CheckArgv(name, argv); err != nil {
		return err
	}
	l[name] = argv
	return nil
}

// maxWorkspaces bounds the config file's [workspaces].
const maxWorkspaces = 64

// addWorkspace adds one line of [workspaces]: a directory, bare or in
// double quotes.
func addWorkspace(ws *[]string, line string) error {
	dir := line
	if strings.HasPrefix(line, `"`) {
		if err := json.Unmarshal([]byte(line), &dir); err != nil {
			return fmt.Errorf("want one directory a line in [workspaces], bare or as a JSON string")
		}
	}
	if dir == "" || strings.ContainsAny(dir, "\x00\n\r") {
		return fmt.Errorf("want one directory a line in [workspaces]")
	}
	if len(*ws) >= maxWorkspaces {
		return fmt.Errorf("over %d workspaces", maxWorkspaces)
	}
	*ws = append(*ws, dir)
	return nil
}

// jsonWorkspaces reads a JSON config's "workspaces": ["DIR", ...].
func jsonWorkspaces(v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("\"workspaces\" must be an array of directories")
	}
	ws := []string{}
	for _, x := range a {
		d, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("\"workspaces\" must be an array of directories")
		}
		if err := addWorkspace(&ws, d); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

// jsonLaunchers reads a JSON config's "launchers": {"NAME": ["argv", ...]}.
func jsonLaunchers(v any) (taskwire.Launchers, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: \"launchers\" must be an object of NAME: [\"argv\", ...]", taskwire.ErrBadLauncher)
	}
	l := taskwire.Launchers{}
	for name, a := range m {
		b, _ := json.Marshal(a)
		if err := addLauncher(l, name, string(b)); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// annWhole marks a repeatable flag whose environment variable holds one
// whole value, not a comma-separated list (a launcher's argv may hold a
// comma).
const AnnWhole = "harn-whole-value"

// wholeValue reports whether f's environment variable is one whole value.
func wholeValue(f *pflag.Flag) bool { return len(f.Annotations[AnnWhole]) > 0 }

// isSecretKey reports config keys whose values are secrets.
func IsSecretKey(k string) bool {
	k = strings.ToLower(strings.ReplaceAll(k, "_", "-"))
	if strings.HasSuffix(k, "-file") {
		return false
	}
	return strings.Contains(k, "key") || strings.Contains(k, "secret") || strings.Contains(k, "token") || strings.Contains(k, "password")
}
