package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/presence/adapter/all"
)

// examples holds every command's Examples section, by command path. A
// command added to the tree needs its entry here: TestEveryCommandHasExamples
// walks the tree and fails for any command without one.
var examples = withAgents(map[string]string{
	"harn": `  harn                            # on a terminal: the TUI of harn's own agent (harn chat)
  harn hook install {agent}   # wire an agent ({others})
  harn doctor                     # check the setup
  harn agents list                # who is working, who needs you`,
	"harn version": `  harn version
  harn version --json`,
	"harn doctor": `  harn doctor
  harn doctor --json
  harn doctor --raft-port 7811    # check the ports a node with this flag would use`,
	"harn web": `  harn web open
  harn web url`,
	"harn web url":  `  harn web url   # the board's URL with ?token=: it opens the board, so keep it private`,
	"harn web open": `  harn web open   # the board in the browser, its token kept out of ps`,
	"harn keygen":   `  harn keygen > ~/.config/harn/gossip.key && chmod 600 ~/.config/harn/gossip.key`,
	"harn keyring": `  harn keyring list
  harn keyring install "$(harn keygen)"
  harn keyring use NEWKEY && harn keyring remove OLDKEY`,
	"harn keyring list": `  harn keyring list
  harn keyring list --json`,
	"harn keyring install": `  harn keyring install "$(harn keygen)"     # every node learns the key; gossip still uses the old one`,
	"harn keyring use":     `  harn keyring use NEWKEY                   # every node now encrypts with it`,
	"harn keyring remove":  `  harn keyring remove OLDKEY                # once every node uses the new key`,
	"harn mesh init": `  harn mesh init                            # on the first server, before its first start
  harn mesh init --name buildbox1 --json
  harn mesh init --server --uses 2          # the printed token makes servers`,
	"harn mesh ca": `  harn mesh ca status
  harn mesh ca rotate && harn mesh ca rotate --finish`,
	"harn mesh ca rotate": `  harn mesh ca rotate                       # a new CA; both are trusted during the overlap
  harn mesh ca rotate --finish              # stop trusting the previous CA`,
	"harn mesh ca status": `  harn mesh ca status
  harn mesh ca status --json`,
	"harn token": `  harn token create --ttl 1h --uses 1
  harn token list`,
	"harn token create": `  harn token create                         # a node token, 24 h, any number of joins
  harn token create --server --uses 1 --ttl 1h
  harn token create --json`,
	"harn token list": `  harn token list
  harn token list --json`,
	"harn token revoke": `  harn token revoke t-3f9a                  # the id that token list shows`,
	"harn trust": `  harn trust add .                          # this directory's .harn/mcp.json, agents, skills and hooks may run
  harn trust list`,
	"harn trust add": `  harn trust add .                          # after reading .harn: what it runs, you run
  harn trust add --allow-other-owner /srv/shared/repo   # a directory another user owns`,
	"harn trust list": `  harn trust list
  harn trust list --json`,
	"harn trust remove": `  harn trust remove ~/src/old-project`,

	"harn task": `  harn task start --exec '{exec2}' "fix the flaky test"
  harn task show t-01J9ZK3`,
	"harn task start": `  harn task start --exec '{exec2}' --profile edit "rename the config loader"
  harn task start --node buildbox --exec '{exec1}' "run the release checks"
  harn task start --session 8a1f0c2e --grants grants.txt "only read, then report" --json`,
	"harn task steer":     `  harn task steer --session h-01J9ZK "use the staging database instead"`,
	"harn task follow-up": `  harn task follow-up --session h-01J9ZK --requires-success "now open the pull request"`,
	"harn task supersede": `  harn task supersede --session h-01J9ZK "stop; fix the build first"`,
	"harn task resume":    `  harn task resume t-01J9ZK3`,
	"harn task cancel":    `  harn task cancel t-01J9ZK3 --reason "wrong branch"`,
	"harn task replace":   `  harn task replace t-01J9ZK3 "open the pull request as a draft"`,
	"harn task ack":       `  harn task ack t-01J9ZK3`,
	"harn task grants":    `  harn task grants t-01J9ZK3 --json`,
	"harn task digest":    `  harn task digest t-01J9ZK4`,
	"harn task confirm":   `  harn task confirm t-01J9ZK3 toolu_01AbC`,
	"harn task deny":      `  harn task deny t-01J9ZK3 toolu_01AbC --reason "not on main"`,
	"harn task reduce": `  harn task reduce t-01J9ZK3 Bash load --reason "no more shell"
  harn task reduce t-01J9ZK3 'mcp__github__*' inspect --json`,
	"harn task pin":     `  harn task pin --session h-01J9ZK "the build is make; never go build"`,
	"harn task compact": `  harn task compact --session h-01J9ZK`,
	"harn profiles": `  harn profiles
  harn profiles --json`,
	"harn context": `  harn context h-01J
  harn context h-01J --provider-view --json`,
	"harn ask": `  HARN_PROVIDER_KEY=sk-... harn ask --provider-url http://127.0.0.1:8080/v1 --model qwen3 "what does main.go do?"
  echo "summarise the last commit" | harn ask --model gpt-4.1 --provider-url https://api.openai.com/v1 --json -
  harn ask --provider anthropic --model sonnet-4.5 --mcp fs="npx @modelcontextprotocol/server-filesystem ." "list the docs"
  harn ask --model qwen3 --profile edit "fix the failing test"   # writes without asking (default: confirm asks first)
  harn ask --session h-01J "now add a test"                     # the session's next task, with its grants`,
	"harn chat": `  HARN_PROVIDER_KEY=sk-... harn chat --provider-url http://127.0.0.1:8080/v1 --model qwen3
  harn chat --session h-01J   # attach to a session of the local node`,
	"harn attach": `  harn attach h-01J           # a harn session on another node, through its owner
  harn attach hs-01J          # a hosted agent's terminal (Ctrl+] detaches; it runs on)
  harn attach --read-only hs-01J`,
	"harn run": `  harn run {agent} "fix the flaky test"                  # here, in this directory
  harn run {agent} --node buildbox --dir /src/app --worktree fix/flaky "fix the flaky test"
  harn run mylauncher --node buildbox --dir /src/app --json`,
	"harn worktrees": `  harn worktrees
  harn worktrees --node buildbox --json`,
	"harn worktrees remove": `  harn worktrees remove fix/flaky --node buildbox
  harn worktrees remove /src/app/.harn/worktrees/fix--flaky --force`,
	"harn agents interrupt": `  harn agents interrupt hs-01J   # its current step stops (Esc); the session goes on`,
	"harn agents stop":      `  harn agents stop hs-01J        # SIGTERM, then SIGKILL after the grace period`,
	"harn usage": `  harn usage
  harn usage --by agent --since 24h --json
  harn usage --by node --prices prices.json`,
	"harn capability": `  harn capability revoke WebFetch
  harn capability restore WebFetch`,
	"harn capability revoke":  `  harn capability revoke 'mcp__github__*' --reason "token leaked" --json`,
	"harn capability restore": `  harn capability restore 'mcp__github__*'`,
	"harn provider": `  harn provider disable mcp
  harn provider enable mcp`,
	"harn provider disable": `  harn provider disable mcp --reason "MCP servers under review" --json`,
	"harn provider enable":  `  harn provider enable mcp`,
	"harn task show": `  harn task show t-01J9ZK3
  harn task show t-01J9ZK3 --json`,
	"harn notify": `  harn notify add webhook https://ntfy.example/harn-alerts --format ntfy --on needs_input,blocked
  harn notify list`,
	"harn notify add": `  harn notify add webhook https://hooks.slack.com/services/T0/B0/XyZ --format slack
  harn notify add webhook https://ntfy.example/harn-alerts --format ntfy --on needs_input,blocked,done
  harn notify add webhook http://127.0.0.1:9000/harn --on unreachable,silent --json`,
	"harn notify list": `  harn notify list
  harn notify list --json`,
	"harn notify remove": `  harn notify remove wh-3f9c01aa`,
	"harn agents wait": `  harn agents wait 8a1f0c2e --for needs_input
  harn agents wait --any --for blocked --timeout 10m --json
  harn agents wait Sable --for done --timeout 1h || echo "not done yet"`,
	"harn agents pending": `  harn agents pending
  harn agents pending --json`,
	"harn agents approve": `  harn agents approve r-01J9ZM2`,
	"harn agents deny":    `  harn agents deny r-01J9ZM2 --reason "not on a Friday"`,
	"harn agents": `  harn agents list
  harn agents show 8a1f0c2e`,
	"harn agents list": `  harn agents list
  harn agents list --all --json
  harn agents list --consistent`,
	"harn agents whoami": `  harn agents whoami
  harn agents whoami --json`,
	"harn agents status": `  harn agents status 8a1f0c2e
  harn agents status 8a1f --json`,
	"harn agents show": `  harn agents show 8a1f0c2e
  harn agents show 8a1f --json`,
	"harn agents trace": `  harn agents trace 8a1f0c2e
  harn agents trace 8a1f0c2e --json`,
	"harn agents lifecycle": `  harn agents lifecycle active
  harn agents lifecycle blocked --reason "waiting for the API key"
  harn agents lifecycle done`,
	"harn agents set-task": `  harn agents set-task "Fix the checkout rounding bug"`,
	"harn agents release-claim": `  harn agents release-claim src/cart.go
  harn agents release-claim --all
  harn agents release-claim --session 8a1f0c2e --all   # the operator frees another session's files`,
	"harn agents end": `  harn agents end
  harn agents end --session 8a1f0c2e --reason "stuck on a prompt"`,
	"harn agents ping": `  harn agents ping 8a1f0c2e
  harn agents ping 8a1f0c2e --json`,
	"harn hook git": `  harn hook git pre-commit    # run by .git/hooks/pre-commit after harn hook install git
  harn hook git post-commit`,
	"harn agents claim": `  harn agents claim src/cart.go src/cart_test.go`,
	"harn agents fold": `  harn agents fold events.jsonl
  cat events.jsonl | harn agents fold -
  harn agents fold --session 8a1f0c2e --full events.jsonl`,

	"harn hook": `  echo '{"session_id":"s1","hook_event_name":"Stop","cwd":"/tmp"}' | harn hook {agent}
  harn hook install {agent2}`,
	"harn hook install": `  harn hook install {agent}
  harn hook install git        # the commit guard in this repository's hooks
  harn hook install {jsonc} --scope project --dry-run
  harn hook install {jsonc} --yes   # write even where a comment inside "hooks" cannot be kept`,
	"harn hook uninstall": `  harn hook uninstall {agent3}
  harn hook uninstall {agent2} --scope project`,

	"harn node": `  harn node
  harn node --server --bootstrap-expect 3 --join buildbox1:7710 --gossip-key "$(cat gossip.key)"
  harn node --no-mesh
  harn node --claims warn          # tell agents of held files, do not stop them
  harn node --http-port 0.0.0.0:7713 --http-token-file board.token   # the board beyond loopback (file mode 0600)
  harn node --metrics-token-file scrape.token   # a token that opens /metrics only`,
	"harn node status": `  harn node status
  harn node status --json`,
	"harn node pid": `  harn node pid
  kill -9 $(harn node pid)         # a crash of this data dir's node, by its own pid`,
	"harn node errors": `  harn node errors
  harn node errors --limit 10 --json`,

	"harn mesh": `  harn mesh members
  harn mesh raft`,
	"harn mesh members": `  harn mesh members
  harn mesh members --json`,
	"harn mesh raft": `  harn mesh raft
  harn mesh raft --json`,
	"harn mesh leave":  `  harn mesh leave`,
	"harn mesh remove": `  harn mesh remove buildbox3`,

	"harn help": `  harn help
  harn help agents list`,
	"harn completion": `  harn completion bash > /etc/bash_completion.d/harn
  harn completion zsh > "${fpath[1]}/_harn"`,
	"harn completion bash":       `  source <(harn completion bash)`,
	"harn completion zsh":        `  harn completion zsh > "${fpath[1]}/_harn"`,
	"harn completion fish":       `  harn completion fish > ~/.config/fish/completions/harn.fish`,
	"harn completion powershell": `  harn completion powershell | Out-String | Invoke-Expression`,
})

// applyExamples sets the Examples section of every command in the tree
// from the examples map; a command that sets its own keeps it.
func applyExamples(root *cobra.Command) {
	hook.WalkCommands(root, func(c *cobra.Command) {
		if strings.TrimSpace(c.Example) != "" {
			return
		}
		c.Example = examples[c.CommandPath()]
	})
}

// withAgents fills the agents' names into the examples: {agent}, {agent2}
// and {agent3} are the installable agents in order, {others} all but the
// first, {jsonc} one whose settings file has comments, {exec1} and {exec2}
// the task command lines of the agents harn can run (adapter.Driven). They
// come from the registry (presence/adapter/all), which is the one place
// that names the agents.
func withAgents(m map[string]string) map[string]string {
	var r *strings.Replacer
	for k, v := range m {
		if !strings.Contains(v, "{agent") && !strings.Contains(v, "{others}") && !strings.Contains(v, "{jsonc}") && !strings.Contains(v, "{exec") {
			continue
		}
		if r == nil {
			r = agentReplacer()
		}
		m[k] = r.Replace(v)
	}
	return m
}

func agentReplacer() *strings.Replacer {
	agents := all.Installable()
	nth := func(i int) string {
		if len(agents) == 0 {
			return "AGENT"
		}
		return agents[i%len(agents)]
	}
	jsonc := nth(0)
	for _, n := range agents {
		if is, _ := all.Install(n); is.Settings.JSONC {
			jsonc = n
			break
		}
	}
	others := "AGENT"
	if len(agents) > 1 {
		others = strings.Join(agents[1:], ", ")
	}
	execs := all.ExecExamples()
	ex := func(i int) string {
		if len(execs) == 0 {
			return "COMMAND"
		}
		return execs[i%len(execs)]
	}
	return strings.NewReplacer("{agent}", nth(0), "{agent2}", nth(1), "{agent3}", nth(2), "{others}", others,
		"{jsonc}", jsonc, "{exec1}", ex(0), "{exec2}", ex(1))
}
