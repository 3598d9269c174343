package trust

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/harn-dev/harn/util/clock"
)

// The trust gRPC service, mounted on the cluster gRPC port next to the
// Cluster service. Its messages are this package's JSON, carried in a
// google.protobuf.BytesValue, so no generated code is needed.
const (
	ServiceName = "harn.trust.v1.Trust"
	// JoinMethod is the one method a client without a certificate may call.
	JoinMethod = "/" + ServiceName + "/Join"
	// RenewMethod renews the caller's certificate (mutual TLS required).
	RenewMethod = "/" + ServiceName + "/Renew"
)

// Reasons carried in a refusal's status details, so that the joining side
// gets a typed error back.
const (
	reasonTokenUnknown = "token_unknown"
	reasonTokenSecret  = "token_secret"
	reasonTokenExpired = "token_expired"
	reasonTokenUsedUp  = "token_used_up"
	reasonBadRequest   = "bad_request"
	reasonRefused      = "refused"
	reasonRateLimited  = "rate_limited"
)

var reasonErrs = map[string]error{
	reasonTokenUnknown: ErrTokenUnknown,
	reasonTokenSecret:  ErrTokenSecret,
	reasonTokenExpired: ErrTokenExpired,
	reasonTokenUsedUp:  ErrTokenUsedUp,
	reasonBadRequest:   ErrBadMessage,
	reasonRefused:      ErrJoinRefused,
	reasonRateLimited:  ErrJoinRateLimited,
}

// Signer signs certificates on a server; *Authority is one.
type Signer interface {
	Sign(csr *x509.CertificateRequest, name string, role Role, ttl time.Duration) (*x509.Certificate, error)
	Roots() *Roots
	CAPEM() ([]byte, error)
}

// JoinServer answers joins and renewals on a server. Set the fields, then
// RegisterService; the zero values of the optional fields are usable.
type JoinServer struct {
	Authority Signer     // required
	Tokens    TokenStore // required
	// Keyring returns the gossip keyring blob handed to a joining node
	// (opaque here); nil hands none.
	Keyring func() ([]byte, error)
	// CheckName refuses a name that another node holds (a live member, or
	// a certificate not yet revoked), so that a token cannot be used to
	// take over an existing node's identity. nil allows any valid name.
	CheckName func(name string) error
	// CertTTL is the issued certificates' lifetime; 0 means DefaultCertTTL.
	CertTTL time.Duration
	// Revocations is checked again on renewal.
	Revocations Revocations
	Clock       clock.Clock
	Log         *slog.Logger
	// MaxConcurrent bounds joins in progress (CSR checks and signatures
	// cost CPU, and the caller is unauthenticated); 0 means 4.
	MaxConcurrent int
	// Limits rate-limits join attempts per source address and in all
	// (zero: the defaults).
	Limits JoinLimits

	once    sync.Once
	limiter *joinLimiter
	limited atomic.Int64
	sem     chan struct{}
	joins   atomic.Int64
	renews  atomic.Int64
	issued  atomic.Int64
	refused atomic.Int64
}

// Stats counts the requests this server received (tests, metrics):
// Limited counts the join attempts refused by the rate limits (they are
// also in Joins and Refused).
type Stats struct{ Joins, Renewals, Issued, Refused, Limited int64 }

// Stats returns the counters.
func (s *JoinServer) Stats() Stats {
	return Stats{Joins: s.joins.Load(), Renewals: s.renews.Load(), Issued: s.issued.Load(), Refused: s.refused.Load(),
		Limited: s.limited.Load()}
}

func (s *JoinServer) init() {
	s.once.Do(func() {
		n := s.MaxConcurrent
		if n <= 0 {
			n = 4
		}
		s.sem = make(chan struct{}, n)
		if s.Clock == nil {
			s.Clock = clock.Real{}
		}
		if s.Log == nil {
			s.Log = slog.New(slog.DiscardHandler)
		}
		s.limiter = newJoinLimiter(s.Limits, s.Clock.Now())
	})
}

// Join handles one encoded JoinRequest (transport-agnostic): decode and
// check it, redeem the token, sign the requested name with the token's
// role, and answer with the certificate, the roots, the keyring, and the
// CA for a server.
func (s *JoinServer) Join(ctx context.Context, req []byte) (_ []byte, err error) {
	s.init()
	s.joins.Add(1)
	source := sourceOf(ctx)
	settle, err := s.limiter.allow(ctx, source, s.Clock.Now)
	if err != nil {
		s.refused.Add(1)
		// One line per limited attempt would let a guesser fill the log.
		if n := s.limited.Add(1); n == 1 || n%100 == 0 {
			s.Log.Warn("trust: join attempts rate limited", "source", sourceOf(ctx), "limited", n, "err", err)
		}
		return nil, err
	}
	defer func() { settle(err == nil) }() // only failed attempts count
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r, csr, err := DecodeJoinRequest(req)
	if err != nil {
		return nil, s.refuse("join", "", err)
	}
	if s.CheckName != nil {
		// Checked before redeeming, so that a taken name costs no use.
		if err := s.CheckName(r.Name); err != nil {
			return nil, s.refuse("join", r.Name, fmt.Errorf("%w: %w", ErrJoinRefused, err))
		}
	}
	role, err := s.Tokens.Redeem(r.TokenID, r.Secret, s.Clock.Now())
	if err != nil {
		return nil, s.refuse("join", r.Name, err)
	}
	if role == RoleServer && !r.Server {
		// The CA key goes only to a joiner that holds a server token and
		// starts as a server.
		s.Log.Warn("trust: a server token was redeemed by a node not started with --server; it gets a node certificate and no CA key",
			"name", r.Name, "token", r.TokenID)
		role = RoleNode
	}
	resp, err := s.issue(csr, r.Name, role)
	if err != nil {
		return nil, err
	}
	if s.Keyring != nil {
		if resp.Keyring, err = s.Keyring(); err != nil {
			return nil, fmt.Errorf("trust: keyring: %w", err)
		}
	}
	if role == RoleServer {
		if resp.CA, err = s.Authority.CAPEM(); err != nil {
			return nil, err
		}
	}
	s.Log.Info("trust: node joined", "name", r.Name, "role", string(role), "token", r.TokenID, "serial", hexSerialOf(resp.Cert))
	return EncodeJoinResponse(resp)
}

// Renew handles one encoded RenewRequest from caller (whose certificate the
// handshake verified): a new certificate for the same name and role.
func (s *JoinServer) Renew(ctx context.Context, caller Identity, req []byte) ([]byte, error) {
	s.init()
	s.renews.Add(1)
	if caller.Name == "" {
		return nil, s.refuse("renew", "", fmt.Errorf("%w: renewal needs the current certificate", ErrNoPeerCert))
	}
	if s.Revocations != nil && s.Revocations.IsRevoked(caller.Serial) {
		return nil, s.refuse("renew", caller.Name, &RefusalError{Caller: caller, Err: ErrRevoked})
	}
	csr, err := DecodeRenewRequest(req)
	if err != nil {
		return nil, s.refuse("renew", caller.Name, err)
	}
	resp, err := s.issue(csr, caller.Name, caller.Role)
	if err != nil {
		return nil, err
	}
	s.Log.Info("trust: certificate renewed", "name", caller.Name, "role", string(caller.Role), "old_serial", caller.Serial, "serial", hexSerialOf(resp.Cert))
	return EncodeJoinResponse(resp)
}

func (s *JoinServer) issue(csr *x509.CertificateRequest, name string, role Role) (*JoinResponse, error) {
	cert, err := s.Authority.Sign(csr, name, role, s.CertTTL)
	if err != nil {
		return nil, err
	}
	s.issued.Add(1)
	resp := &JoinResponse{Name: name, Role: role, Cert: cert.Raw}
	for _, c := range s.Authority.Roots().Certs() {
		resp.Roots = append(resp.Roots, c.Raw)
	}
	return resp, nil
}

func (s *JoinServer) refuse(op, name string, err error) error {
	s.refused.Add(1)
	s.Log.Warn("trust: refused", "op", op, "name", clipName(name), "err", err)
	return err
}

func hexSerialOf(der []byte) string {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return ""
	}
	return SerialString(c)
}

// toStatus maps this package's errors to gRPC statuses with a reason the
// client maps back.
func toStatus(err error) error {
	code, reason := codes.Internal, ""
	switch {
	case errors.Is(err, ErrTokenUnknown):
		code, reason = codes.PermissionDenied, reasonTokenUnknown
	case errors.Is(err, ErrTokenSecret):
		code, reason = codes.PermissionDenied, reasonTokenSecret
	case errors.Is(err, ErrTokenExpired):
		code, reason = codes.PermissionDenied, reasonTokenExpired
	case errors.Is(err, ErrTokenUsedUp):
		code, reason = codes.PermissionDenied, reasonTokenUsedUp
	case errors.Is(err, ErrBadMessage), errors.Is(err, ErrBadCSR), errors.Is(err, ErrBadName),
		errors.Is(err, ErrBadToken), errors.Is(err, ErrTooLarge):
		code, reason = codes.InvalidArgument, reasonBadRequest
	case errors.Is(err, ErrJoinRefused), errors.Is(err, ErrRevoked), errors.Is(err, ErrNoPeerCert):
		code, reason = codes.PermissionDenied, reasonRefused
	case errors.Is(err, ErrJoinRateLimited):
		code, reason = codes.ResourceExhausted, reasonRateLimited
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		code = codes.Canceled
	}
	st := status.New(code, err.Error())
	if reason != "" {
		if d, derr := st.WithDetails(wrapperspb.String(reason)); derr == nil {
			st = d
		}
	}
	return st.Err()
}

// fromStatus maps a refusal back to a typed error.
func fromStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, d := range st.Details() {
		if s, ok := d.(*wrapperspb.StringValue); ok {
			if sentinel, ok := reasonErrs[s.Value]; ok {
				return fmt.Errorf("%w: server says: %s", sentinel, clipName(st.Message()))
			}
		}
	}
	return fmt.Errorf("%w: %s: %s", ErrJoinRefused, st.Code(), clipName(st.Message()))
}

type trustService interface{}

// RegisterService mounts the trust service (Join, Renew) on a gRPC server,
// next to the Cluster service. The server's credentials must come from
// ServerTLS with AllowAnonymous, and its interceptors must include a
// Guard's, which keeps anonymous callers to JoinMethod.
func RegisterService(reg grpc.ServiceRegistrar, s *JoinServer) {
	reg.RegisterService(&grpc.ServiceDesc{
		ServiceName: ServiceName,
		HandlerType: (*trustService)(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "Join", Handler: unaryHandler(JoinMethod, func(ctx context.Context, b []byte) ([]byte, error) {
				return s.Join(ctx, b)
			})},
			{MethodName: "Renew", Handler: unaryHandler(RenewMethod, func(ctx context.Context, b []byte) ([]byte, error) {
				id, err := PeerFromContext(ctx)
				if err != nil {
					return nil, err
				}
				return s.Renew(ctx, id, b)
			})},
		},
		Metadata: "harn/trust",
	}, s)
}

func unaryHandler(method string, f func(context.Context, []byte) ([]byte, error)) grpc.MethodHandler {
	return func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.BytesValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		call := func(ctx context.Context, req any) (any, error) {
			out, err := f(ctx, req.(*wrapperspb.BytesValue).GetValue())
			if err != nil {
				return nil, toStatus(err)
			}
			return wrapperspb.Bytes(out), nil
		}
		if icpt == nil {
			return call(ctx, in)
		}
		return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: method}, call)
	}
}

// PeerFromContext is the verified identity of a gRPC call's peer (served
// with ServerTLS). ErrNoPeerCert for an anonymous or non-TLS peer.
func PeerFromContext(ctx context.Context) (Identity, error) {
	st, ok := tlsState(ctx)
	if !ok {
		return Identity{}, ErrNoPeerCert
	}
	return PeerIdentity(st)
}

func tlsState(ctx context.Context) (tls.ConnectionState, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.AuthInfo == nil {
		return tls.ConnectionState{}, false
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return tls.ConnectionState{}, false
	}
	return ti.State, true
}

// Guard is the cluster gRPC port's gate: every call needs a verified mesh
// certificate, still valid and not revoked at the time of the call (a
// connection outlives a revocation), except JoinMethod, which an anonymous
// caller may use. It fails closed: a server without TLS refuses every call.
type Guard struct {
	Revocations Revocations // nil: none
	Clock       clock.Clock // nil: the wall clock
	Log         *slog.Logger
}

// check admits or refuses one call.
func (g *Guard) check(ctx context.Context, method string) error {
	st, ok := tlsState(ctx)
	if !ok {
		return status.Error(codes.Unauthenticated, "trust: this port needs TLS")
	}
	if len(st.PeerCertificates) == 0 {
		if method == JoinMethod {
			return nil
		}
		g.logRefusal(method, Identity{}, ErrNoPeerCert)
		return status.Error(codes.Unauthenticated, "trust: this call needs a mesh certificate (join the mesh with --join-token)")
	}
	id, err := PeerIdentity(st)
	if err != nil {
		g.logRefusal(method, id, err)
		return status.Error(codes.Unauthenticated, err.Error())
	}
	now := clock.Or(g.Clock).Now()
	if leaf := st.PeerCertificates[0]; now.Before(leaf.NotBefore) || !now.Before(leaf.NotAfter) {
		err := &RefusalError{Caller: id, Err: ErrExpired}
		g.logRefusal(method, id, err)
		return status.Error(codes.Unauthenticated, err.Error())
	}
	if g.Revocations != nil && g.Revocations.IsRevoked(id.Serial) {
		err := &RefusalError{Caller: id, Err: ErrRevoked}
		g.logRefusal(method, id, err)
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return nil
}

func (g *Guard) logRefusal(method string, id Identity, err error) {
	if g.Log != nil {
		g.Log.Warn("trust: refused call", "method", method, "caller", id.String(), "err", err)
	}
}

// Unary is the guard as a unary interceptor.
func (g *Guard) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := g.check(ctx, info.FullMethod); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

// Stream is the guard as a stream interceptor.
func (g *Guard) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if err := g.check(ss.Context(), info.FullMethod); err != nil {
			return err
		}
		return h(srv, ss)
	}
}
