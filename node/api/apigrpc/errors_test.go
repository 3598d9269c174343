package apigrpc

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
)

// TestErrorMapsCodeAndReasonToSentinels: a node's status matches the
// sentinel of its code and the one of its ErrorInfo reason, keeps its
// text, and Status gives its code, message and reason back.
func TestErrorMapsCodeAndReasonToSentinels(t *testing.T) {
	err := Error(WithReason(codes.Unavailable, api.ReasonOwnerUnreachable, "coord: the owner is unreachable"))
	if !errors.Is(err, api.ErrUnavailable) || !errors.Is(err, api.ErrOwnerUnreachable) || errors.Is(err, api.ErrWriteRefused) {
		t.Fatalf("%v: sentinels do not match", err)
	}
	if st, ok := Status(err), true; !ok || st.Message() != "coord: the owner is unreachable" || st.Code() != codes.Unavailable {
		t.Fatalf("status of %v: %v %v", err, st, ok)
	}
	wrapped := fmt.Errorf("call: %w", Error(status.Error(codes.NotFound, "no such session")))
	if !errors.Is(wrapped, api.ErrNotFound) || errors.Is(wrapped, api.ErrLedgerUnwritable) {
		t.Fatalf("%v: want api.ErrNotFound alone", wrapped)
	}
	if Error(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	plain := errors.New("not a status")
	if Error(plain) != plain {
		t.Fatal("an error without a status must come back as it is")
	}
	for c, want := range map[codes.Code]error{codes.InvalidArgument: api.ErrInvalid, codes.FailedPrecondition: api.ErrRefused,
		codes.Aborted: api.ErrAmbiguous, codes.ResourceExhausted: api.ErrNoLeader, codes.Unimplemented: api.ErrUnimplemented,
		codes.DeadlineExceeded: api.ErrUnavailable, codes.PermissionDenied: api.ErrPermission, codes.Internal: api.ErrInternal} {
		if err := Error(status.Error(c, "x")); !errors.Is(err, want) {
			t.Errorf("%v: not %v", c, want)
		}
	}
}
