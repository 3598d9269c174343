package board

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/harn-dev/harn/node/acttoken"
	"github.com/harn-dev/harn/util/text"
)

// ActPath is where a notification's Approve and Deny buttons post: the one
// route that takes an action token instead of the board's token.
const ActPath = "/act"

// ActTokenHeader carries the action token. A header, not the URL: the
// URL lands in access logs and histories, and a browser cannot add a
// custom header to a cross-site request without a preflight this board
// never allows.
const ActTokenHeader = "X-Harn-Action-Token"

// maxActBody bounds the body of POST /act.
const maxActBody = 1 << 10

// ActBody is the body of POST /act: the request and the decision the
// token is for. Both must be the token's.
type ActBody struct {
	Request  string `json:"request"`
	Decision string `json:"decision"`
}

// Decider makes the decision an action token names: the node spends the
// token, then answers the request as `harn agents approve|deny` does.
// Errors wrap the acttoken sentinels, ErrAnswered or ErrNotWaiting.
type Decider interface {
	Decide(ctx context.Context, token, request string, d acttoken.Decision) (string, error)
}

// Errors a Decider wraps for a request it cannot answer.
var (
	// ErrAnswered: the request was answered already (another way).
	ErrAnswered = errors.New("board: the request was already answered")
	// ErrNotWaiting: the request is no longer waiting (its hook gave up),
	// or this node has no such request.
	ErrNotWaiting = errors.New("board: the request is no longer waiting")
)

// actStatus is the HTTP status of a refusal.
func actStatus(err error) int {
	switch {
	case errors.Is(err, acttoken.ErrInvalid), errors.Is(err, acttoken.ErrOtherRequest),
		errors.Is(err, acttoken.ErrOtherDecision):
		return http.StatusForbidden
	case errors.Is(err, acttoken.ErrSpent), errors.Is(err, ErrAnswered):
		return http.StatusConflict
	case errors.Is(err, acttoken.ErrExpired), errors.Is(err, acttoken.ErrClosed), errors.Is(err, ErrNotWaiting):
		return http.StatusGone
	case errors.Is(err, acttoken.ErrBadRequest):
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

// act is POST /act. The guard sends it here before looking for the
// board's token: the action token is its only proof, and it proves one
// decision on one request, nothing else. It sets no cookie and needs no
// CSRF token (it rides on no ambient credential).
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, res result) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(res)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(http.StatusMethodNotAllowed, result{Message: "refused: " + ActPath + " takes POST only"})
		return
	}
	if s.cfg.Decider == nil {
		reply(http.StatusNotFound, result{Message: "this board takes no action tokens"})
		return
	}
	tok := strings.TrimSpace(r.Header.Get(ActTokenHeader))
	if tok == "" {
		w.Header().Set("Connection", "close")
		reply(http.StatusUnauthorized, result{Message: "refused: no action token (" + ActTokenHeader + ")"})
		return
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxActBody))
	dec.DisallowUnknownFields()
	var b ActBody
	if err := dec.Decode(&b); err != nil {
		reply(http.StatusBadRequest, result{Message: `bad body: want {"request":"r-…","decision":"allow|deny"}`})
		return
	}
	d := acttoken.Decision(b.Decision)
	if !d.Valid() || b.Request == "" {
		reply(http.StatusBadRequest, result{Message: `bad body: want {"request":"r-…","decision":"allow|deny"}`})
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	msg, err := s.cfg.Decider.Decide(ctx, tok, text.Clip(text.OneLine(b.Request), acttoken.MaxRequestID), d)
	if err != nil {
		status := actStatus(err)
		s.cfg.Logger.Info("board: action token refused", "status", status, "err", err)
		reply(status, result{Message: "refused: " + text.OneLine(err.Error())})
		return
	}
	reply(http.StatusOK, result{OK: true, Message: text.OneLine(msg)})
}
