package api

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestErrorMapsCodeAndReasonToSentinels: a node's status matches the
// sentinel of its code and the one of its ErrorInfo reason, keeps its
// text, and status.FromError still reads it.
func TestErrorMapsCodeAndReasonToSentinels(t *testing.T) {
	err := Error(WithReason(codes.Unavailable, ReasonOwnerUnreachable, "coord: the owner is unreachable"))
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrOwnerUnreachable) || errors.Is(err, ErrWriteRefused) {
		t.Fatalf("%v: sentinels do not match", err)
	}
	if st, ok := status.FromError(err); !ok || st.Message() != "coord: the owner is unreachable" || st.Code() != codes.Unavailable {
		t.Fatalf("status of %v: %v %v", err, st, ok)
	}
	wrapped := fmt.Errorf("call: %w", Error(status.Error(codes.NotFound, "no such session")))
	if !errors.Is(wrapped, ErrNotFound) || errors.Is(wrapped, ErrLedgerUnwritable) {
		t.Fatalf("%v: want ErrNotFound alone", wrapped)
	}
	if Error(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	plain := errors.New("not a status")
	if Error(plain) != plain {
		t.Fatal("an error without a status must come back as it is")
	}
	for c, want := range map[codes.Code]error{codes.InvalidArgument: ErrInvalid, codes.FailedPrecondition: ErrRefused,
		codes.Aborted: ErrAmbiguous, codes.ResourceExhausted: ErrNoLeader, codes.Unimplemented: ErrUnimplemented,
		codes.DeadlineExceeded: ErrUnavailable, codes.PermissionDenied: ErrPermission, codes.Internal: ErrInternal} {
		if err := Error(status.Error(c, "x")); !errors.Is(err, want) {
			t.Errorf("%v: not %v", c, want)
		}
	}
}
