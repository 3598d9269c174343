package agent

import (
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

var (
	codecOnce sync.Once
	codec     tokenizer.Codec

	cacheMu sync.Mutex
	cache   = map[string]int{} // text -> tokens: a request repeats its prefix and history every step
)

// maxCached bounds the token cache; over it the cache starts afresh.
const maxCached = 8192

// Tokens estimates the tokens of s with the o200k vocabulary (embedded,
// no network); for a model with another vocabulary it is an estimate,
// reconciled with the usage the provider reports (the ledger keeps both).
func Tokens(s string) int {
	if s == "" {
		return 0
	}
	cacheMu.Lock()
	n, ok := cache[s]
	cacheMu.Unlock()
	if ok {
		return n
	}
	n = count(s)
	cacheMu.Lock()
	if len(cache) >= maxCached {
		clear(cache)
	}
	cache[s] = n
	cacheMu.Unlock()
	return n
}

// WarmTokens loads the vocabulary now (once per process) rather than on
// the first estimate: the node calls it in the background as it starts,
// so that its first `harn ask` does not wait for it (about 120 ms on a
// loaded 2-core machine).
func WarmTokens() { codecOnce.Do(loadCodec) }

func loadCodec() {
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err == nil {
		codec = c
	}
}

func count(s string) int {
	codecOnce.Do(loadCodec)
	if codec == nil || s == "" {
		return (len(s) + 3) / 4
	}
	n, err := codec.Count(s)
	if err != nil {
		return (len(s) + 3) / 4
	}
	return n
}

// perMessage is the framing of one message in a request.
const perMessage = 4

// Estimate is the estimated input tokens of a request.
func Estimate(req Request) int {
	n := 3
	for _, s := range req.System {
		n += Tokens(s) + perMessage
	}
	for _, m := range req.Messages {
		n += MessageTokens(m)
	}
	for _, t := range req.Tools {
		n += Tokens(t.Name) + Tokens(t.Description) + Tokens(string(t.Schema)) + perMessage
	}
	return n
}

// MessageTokens is the estimated tokens of one message.
func MessageTokens(m Message) int {
	n := perMessage + Tokens(m.Text)
	for _, c := range m.Calls {
		n += Tokens(c.Name) + Tokens(string(c.Args)) + perMessage
	}
	return n
}
