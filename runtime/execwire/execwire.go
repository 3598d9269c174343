// Package execwire holds what a client of the exec room sees of it — a
// steer's result and the parser of an agent's command line — without the
// process code: its room is the values the task wire carries, so that harn
// and harn-hook link neither runtime/exec nor the processes it runs.
package execwire

import (
	"errors"
	"fmt"
	"strings"
)

// SteerMode says what became of a steer.
type SteerMode string

// The steer modes.
const (
	SteerDelivered SteerMode = "delivered" // written to the agent's streaming input
	SteerFollowUp  SteerMode = "follow_up" // queued as a follow-up task
	SteerDropped   SteerMode = "dropped"   // the task was cancelled before it could be delivered
)

// SteerResult is the answer to a steer: where it went, and a message the
// caller can print as is.
type SteerResult struct {
	Mode    SteerMode `json:"mode"`
	Task    string    `json:"task"`              // the task that got it: the steered task, or the new follow-up
	Steered string    `json:"steered,omitempty"` // the task the steer was meant for
	Message string    `json:"message"`
}

// Bounds of a command line.
const (
	MaxCommandBytes = 16 << 10
	MaxCommandWords = 256
)

// ParseCommand splits a command line (`--exec 'COMMAND'`) into words the
// way a POSIX shell does for quoting only: blanks separate words, single
// quotes keep everything literal, double quotes keep everything but `\"`,
// `\\`, `\$` and "\`" literal, and a backslash outside quotes escapes the
// next byte. Nothing is expanded: no variables, globs, pipes or
// redirections; a shell operator outside quotes is refused, so a command
// that needs one must name its shell (`sh -c '…'`).
func ParseCommand(s string) ([]string, error) {
	if len(s) > MaxCommandBytes {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrBadCommand, len(s), MaxCommandBytes)
	}
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
	)
	flush := func() error {
		if in {
			if len(words) == MaxCommandWords {
				return fmt.Errorf("%w: over %d words", ErrBadCommand, MaxCommandWords)
			}
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0 || c == '\n' || c == '\r':
			return nil, fmt.Errorf("%w: a NUL or line break at byte %d", ErrBadCommand, i)
		case c == ' ' || c == '\t':
			if err := flush(); err != nil {
				return nil, err
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("%w: unclosed single quote at byte %d", ErrBadCommand, i)
			}
			cur.WriteString(s[i+1 : i+1+j])
			in, i = true, i+1+j
		case c == '"':
			in = true
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == 0 || s[j] == '\n' || s[j] == '\r' {
					return nil, fmt.Errorf("%w: a NUL or line break at byte %d", ErrBadCommand, j)
				}
				if s[j] == '\\' && j+1 < len(s) && strings.IndexByte("\"\\$`", s[j+1]) >= 0 {
					j++
				}
				cur.WriteByte(s[j])
			}
			if j == len(s) {
				return nil, fmt.Errorf("%w: unclosed double quote at byte %d", ErrBadCommand, i)
			}
			i = j
		case c == '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("%w: a backslash ends the command", ErrBadCommand)
			}
			i++
			if s[i] == 0 || s[i] == '\n' || s[i] == '\r' {
				return nil, fmt.Errorf("%w: a NUL or line break at byte %d", ErrBadCommand, i)
			}
			cur.WriteByte(s[i])
			in = true
		case strings.IndexByte(";&|<>$`(){}*?[#~", c) >= 0 && !(in && (c == '#' || c == '~')):
			return nil, fmt.Errorf("%w: shell operator %q at byte %d; quote it, or run the command through `sh -c '…'`", ErrBadCommand, c, i)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, ErrNoCommand
	}
	return words, nil
}

// Sentinels of ParseCommand. Match them with errors.Is.
var (
	ErrNoCommand  = errors.New("exec: no agent command; give the command to run, for example `claude -p --output-format stream-json --input-format stream-json --verbose`")
	ErrBadCommand = errors.New("exec: bad command line")
)
