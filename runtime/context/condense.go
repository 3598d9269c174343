package context

import (
	stdctx "context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/harn-dev/harn/runtime/agent"
	"github.com/harn-dev/harn/util/text"
)

// Condenser condenses completed work into a summary (LLM compaction).
type Condenser interface {
	// Condense returns a summary of in; it returns when done or ctx ends.
	Condense(ctx stdctx.Context, in CondenseInput) (string, error)
}

// CondenseInput is one condensation request, in a deterministic order.
type CondenseInput struct {
	Previous  string          // the summary it replaces (may be empty)
	Items     []agent.Message // the work to condense, oldest first, bounded
	Pins      []string        // labels the summary must keep, each verbatim
	Sections  []string        // headings the summary must have
	CapTokens int             // the summary's size cap
}

// Sections every condensation must have.
var Sections = []string{"## Goal", "## Progress", "## Next"}

// Bounds of a condensation's input.
const (
	maxCondenseItemBytes  = 2 << 10
	maxCondenseInputBytes = 64 << 10
)

// condense runs one bounded condensation of the plan's units; an invalid
// output is retried once.
func (c *Lane) condense(ctx stdctx.Context, cond Condenser, p plan) (string, error) {
	in := CondenseInput{Sections: Sections, CapTokens: summaryCap(p.budget) / 2}
	if p.prev != nil {
		in.Previous = p.prev.Head
	}
	in.Pins = pinLabels(in.Previous)
	size := 0
	for i, u := range p.units {
		if !p.archive[i] {
			for _, it := range u.items {
				if it.rec.Pinned {
					in.Pins = append(in.Pins, fmt.Sprintf("[pin:%x]", it.rec.Seq))
				}
			}
			continue
		}
		for _, it := range u.items {
			m := *it.rec.Msg
			m.Text = text.Clip(m.Text, maxCondenseItemBytes)
			if size += len(m.Text); size > maxCondenseInputBytes {
				break
			}
			in.Items = append(in.Items, m)
		}
	}
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		out, err := c.condenseOnce(ctx, cond, in)
		if err == nil {
			if err = validate(out, in); err == nil {
				return out, nil
			}
			last = err
			continue // invalid: retried once
		}
		return "", err
	}
	return "", fmt.Errorf("condensation invalid twice: %w", last)
}

func (c *Lane) condenseOnce(ctx stdctx.Context, cond Condenser, in CondenseInput) (string, error) {
	cctx, cancel := stdctx.WithCancelCause(ctx)
	defer cancel(nil)
	t := c.s.opts.Clock.AfterFunc(c.s.opts.CondenseTimeout, func() { cancel(errCondenseTimeout) })
	defer t.Stop()
	out, err := cond.Condense(cctx, in)
	if errors.Is(stdctx.Cause(cctx), errCondenseTimeout) {
		return "", fmt.Errorf("%w after %s", errCondenseTimeout, c.s.opts.CondenseTimeout)
	}
	if err != nil {
		return "", fmt.Errorf("condensation unavailable: %w", err)
	}
	return out, nil
}

var errCondenseTimeout = errors.New("condensation timed out")

var pinRE = regexp.MustCompile(`\[pin:[0-9a-f]+\]`)

func pinLabels(s string) []string { return pinRE.FindAllString(s, -1) }

// validate checks a condensation: its sections, its cap, every pin.
func validate(out string, in CondenseInput) error {
	for _, s := range in.Sections {
		if !strings.Contains(out, s) {
			return fmt.Errorf("%w: section %q missing", ErrInvalidCondensation, s)
		}
	}
	if n := agent.Tokens(out); n > in.CapTokens {
		return fmt.Errorf("%w: %d tokens over its cap of %d", ErrInvalidCondensation, n, in.CapTokens)
	}
	for _, p := range in.Pins {
		if !strings.Contains(out, p) {
			return fmt.Errorf("%w: pin %s lost", ErrInvalidCondensation, p)
		}
	}
	return nil
}

// ProviderCondenser condenses with a model call of the session's provider.
type ProviderCondenser struct {
	Provider agent.Provider
	Model    string
}

// condensePrompt instructs the condensing model.
const condensePrompt = "You condense an agent's completed work so that it can continue without it. " +
	"Answer with a summary only, in Markdown, with exactly these headings: %s. " +
	"Keep file paths, decisions, errors and open questions; keep every label of the form [pin:…] verbatim. " +
	"Stay under %d tokens. Output references like out-1a stay recallable: keep the ones still useful."

// Condense asks the model for the summary.
func (p ProviderCondenser) Condense(ctx stdctx.Context, in CondenseInput) (string, error) {
	var b strings.Builder
	if in.Previous != "" {
		b.WriteString("Summary so far:\n" + in.Previous + "\n\n")
	}
	if len(in.Pins) > 0 {
		b.WriteString("Labels to keep: " + strings.Join(in.Pins, " ") + "\n\n")
	}
	b.WriteString("Work to condense, oldest first:\n")
	for _, m := range in.Items {
		b.WriteString(m.Role + ": " + m.Text)
		for _, c := range m.Calls {
			b.WriteString(" [call " + c.Name + " " + text.Clip(string(c.Args), 256) + "]")
		}
		b.WriteString("\n")
	}
	req := agent.Request{Model: p.Model, MaxOutput: in.CapTokens,
		System:   []string{fmt.Sprintf(condensePrompt, strings.Join(in.Sections, ", "), in.CapTokens)},
		Messages: []agent.Message{{Role: agent.RoleUser, Text: b.String()}}}
	resp, err := p.Provider.Complete(ctx, req, nil)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(resp.Text), nil
}

// instrMessage is the protected instructions as the model sees them.
func instrMessage(s string) agent.Message {
	return agent.Message{Role: agent.RoleUser, Text: "Repository instructions (protected; follow them):\n\n" + s}
}

// summaryMessage is a checkpoint as the model sees it.
func summaryMessage(seq uint64, cp *Checkpoint) agent.Message {
	return agent.Message{Role: agent.RoleUser, Text: renderSummary(seq, cp)}
}

func renderSummary(_ uint64, cp *Checkpoint) string {
	var b strings.Builder
	b.WriteString("Context checkpoint: earlier work left the working set; nothing is lost. ")
	b.WriteString("Each out-… reference below returns its exact output with the recall tool.\n")
	if cp.Head != "" {
		b.WriteByte('\n')
		b.WriteString(cp.Head)
		b.WriteByte('\n')
	}
	if len(cp.Lines) > 0 || cp.Dropped > 0 {
		b.WriteString("\nArchived exchanges, oldest first:\n")
		if cp.Dropped > 0 {
			fmt.Fprintf(&b, "- (%d older archived exchanges are in the session's history)\n", cp.Dropped)
		}
		for _, l := range cp.Lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// preview is what the model sees of a tool output: the whole of it when
// it fits, else its head and tail around the reference and the range left
// out.
func preview(full, ref string, orig, max int) string {
	cut := ""
	if orig > len(full) {
		cut = fmt.Sprintf(" (the output was %d bytes; harn kept the first %d)", orig, len(full))
	}
	if len(full) <= max {
		if cut != "" {
			return full + "\n[" + ref + cut + "]"
		}
		return full
	}
	half := max / 2
	head := validPrefix(full[:half])
	tail := validSuffix(full[len(full)-half:])
	return fmt.Sprintf("%s\n[… %d bytes not shown; recall {\"ref\":%q,\"offset\":%d,\"length\":%d} returns them%s …]\n%s",
		head, len(full)-len(head)-len(tail), ref, len(head), len(full)-len(head)-len(tail), cut, tail)
}

// validPrefix drops a rune cut at the end; validSuffix one at the start.
func validPrefix(s string) string {
	for i := 0; i < 4 && len(s) > 0; i++ {
		if r := s[len(s)-1]; r < 0x80 {
			return s
		} else if r >= 0xC0 { // a lead byte without its continuation
			return s[:len(s)-1]
		}
		// continuation byte: check that its rune is whole
		j := len(s) - 1
		for j > 0 && s[j]&0xC0 == 0x80 {
			j--
		}
		need := 1
		switch lead := s[j]; {
		case lead >= 0xF0:
			need = 4
		case lead >= 0xE0:
			need = 3
		case lead >= 0xC0:
			need = 2
		}
		if len(s)-j >= need {
			return s
		}
		return s[:j]
	}
	return s
}

func validSuffix(s string) string {
	i := 0
	for i < len(s) && i < 4 && s[i]&0xC0 == 0x80 {
		i++
	}
	return s[i:]
}
