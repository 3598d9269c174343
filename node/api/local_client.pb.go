// Code generated from node/api/apigrpc/services_grpc.pb.go by
// scripts/gen-localclient.py. DO NOT EDIT.

package api

import "context"

// Doctor calls /harn.v1.Local/Doctor.
func (c *Client) Doctor(ctx context.Context, in *DoctorRequest) (*DoctorResponse, error) {
	out := new(DoctorResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Doctor", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Append calls /harn.v1.Local/Append.
func (c *Client) Append(ctx context.Context, in *AppendRequest) (*AppendResponse, error) {
	out := new(AppendResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Append", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Diagnose calls /harn.v1.Local/Diagnose.
func (c *Client) Diagnose(ctx context.Context, in *DiagnoseRequest) (*DiagnoseResponse, error) {
	out := new(DiagnoseResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Diagnose", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// List calls /harn.v1.Local/List.
func (c *Client) List(ctx context.Context, in *ListRequest) (*ListResponse, error) {
	out := new(ListResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/List", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Get calls /harn.v1.Local/Get.
func (c *Client) Get(ctx context.Context, in *SessionRequest) (*SessionResponse, error) {
	out := new(SessionResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Get", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Trace calls /harn.v1.Local/Trace.
func (c *Client) Trace(ctx context.Context, in *SessionRequest) (*TraceResponse, error) {
	out := new(TraceResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Trace", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Whoami calls /harn.v1.Local/Whoami.
func (c *Client) Whoami(ctx context.Context, in *WhoamiRequest) (*SessionResponse, error) {
	out := new(SessionResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Whoami", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Lifecycle calls /harn.v1.Local/Lifecycle.
func (c *Client) Lifecycle(ctx context.Context, in *LifecycleRequest) (*LifecycleResponse, error) {
	out := new(LifecycleResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Lifecycle", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// SetTask calls /harn.v1.Local/SetTask.
func (c *Client) SetTask(ctx context.Context, in *SetTaskRequest) (*MutateResponse, error) {
	out := new(MutateResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/SetTask", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Claim calls /harn.v1.Local/Claim.
func (c *Client) Claim(ctx context.Context, in *ClaimRequest) (*MutateResponse, error) {
	out := new(MutateResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Claim", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Errors calls /harn.v1.Local/Errors.
func (c *Client) Errors(ctx context.Context, in *ErrorsRequest) (*ErrorsResponse, error) {
	out := new(ErrorsResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Errors", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Status calls /harn.v1.Local/Status.
func (c *Client) Status(ctx context.Context, in *StatusRequest) (*StatusResponse, error) {
	out := new(StatusResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Status", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Members calls /harn.v1.Local/Members.
func (c *Client) Members(ctx context.Context, in *MeshRequest) (*MembersResponse, error) {
	out := new(MembersResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Members", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Raft calls /harn.v1.Local/Raft.
func (c *Client) Raft(ctx context.Context, in *MeshRequest) (*RaftResponse, error) {
	out := new(RaftResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Raft", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Leave calls /harn.v1.Local/Leave.
func (c *Client) Leave(ctx context.Context, in *MeshRequest) (*LeaveResponse, error) {
	out := new(LeaveResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Leave", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// RemoveServer calls /harn.v1.Local/RemoveServer.
func (c *Client) RemoveServer(ctx context.Context, in *RemoveServerRequest) (*RemoveServerResponse, error) {
	out := new(RemoveServerResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/RemoveServer", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Task calls /harn.v1.Local/Task.
func (c *Client) Task(ctx context.Context, in *TaskRequest) (*TaskResponse, error) {
	out := new(TaskResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Task", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Decide calls /harn.v1.Local/Decide.
func (c *Client) Decide(ctx context.Context, in *DecideRequest) (*DecideResponse, error) {
	out := new(DecideResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Decide", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// AwaitApproval calls /harn.v1.Local/AwaitApproval.
func (c *Client) AwaitApproval(ctx context.Context, in *ApprovalRequest) (*ApprovalResponse, error) {
	out := new(ApprovalResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/AwaitApproval", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Pending calls /harn.v1.Local/Pending.
func (c *Client) Pending(ctx context.Context, in *PendingRequest) (*PendingResponse, error) {
	out := new(PendingResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Pending", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Answer calls /harn.v1.Local/Answer.
func (c *Client) Answer(ctx context.Context, in *AnswerRequest) (*AnswerResponse, error) {
	out := new(AnswerResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Answer", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Notify calls /harn.v1.Local/Notify.
func (c *Client) Notify(ctx context.Context, in *NotifyRequest) (*NotifyResponse, error) {
	out := new(NotifyResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Notify", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Wait calls /harn.v1.Local/Wait.
func (c *Client) Wait(ctx context.Context, in *WaitRequest) (*WaitResponse, error) {
	out := new(WaitResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Wait", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Coord calls /harn.v1.Local/Coord.
func (c *Client) Coord(ctx context.Context, in *CoordRequest) (*CoordResponse, error) {
	out := new(CoordResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Coord", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Reduce calls /harn.v1.Local/Reduce.
func (c *Client) Reduce(ctx context.Context, in *ReduceRequest) (*TaskResponse, error) {
	out := new(TaskResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Reduce", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Override calls /harn.v1.Local/Override.
func (c *Client) Override(ctx context.Context, in *OverrideRequest) (*OverrideResponse, error) {
	out := new(OverrideResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Override", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Context calls /harn.v1.Local/Context.
func (c *Client) Context(ctx context.Context, in *ContextRequest) (*ContextResponse, error) {
	out := new(ContextResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/Context", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DirTrust calls /harn.v1.Local/DirTrust.
func (c *Client) DirTrust(ctx context.Context, in *DirTrustRequest) (*DirTrustResponse, error) {
	out := new(DirTrustResponse)
	if err := c.Invoke(ctx, "/harn.v1.Local/DirTrust", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// TokenCreate calls /harn.v1.MeshAdmin/TokenCreate.
func (c *AdminClient) TokenCreate(ctx context.Context, in *TokenCreateRequest) (*TokenCreated, error) {
	out := new(TokenCreated)
	if err := c.Invoke(ctx, "/harn.v1.MeshAdmin/TokenCreate", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// TokenList calls /harn.v1.MeshAdmin/TokenList.
func (c *AdminClient) TokenList(ctx context.Context, in *AdminEmpty) (*TokenListResponse, error) {
	out := new(TokenListResponse)
	if err := c.Invoke(ctx, "/harn.v1.MeshAdmin/TokenList", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// TokenRevoke calls /harn.v1.MeshAdmin/TokenRevoke.
func (c *AdminClient) TokenRevoke(ctx context.Context, in *TokenRevokeRequest) (*AdminEmpty, error) {
	out := new(AdminEmpty)
	if err := c.Invoke(ctx, "/harn.v1.MeshAdmin/TokenRevoke", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// KeyringList calls /harn.v1.MeshAdmin/KeyringList.
func (c *AdminClient) KeyringList(ctx context.Context, in *AdminEmpty) (*KeyringView, error) {
	out := new(KeyringView)
	if err := c.Invoke(ctx, "/harn.v1.MeshAdmin/KeyringList", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// KeyringChange calls /harn.v1.MeshAdmin/KeyringChange.
func (c *AdminClient) KeyringChange(ctx context.Context, in *KeyringChangeRequest) (*KeyringView, error) {
	out := new(KeyringView)
	if err := c.Invoke(ctx, "/harn.v1.MeshAdmin/KeyringChange", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// RevokeNode calls /harn.v1.MeshAdmin/RevokeNode.
func (c *AdminClient) RevokeNode(ctx context.Context, in *RevokeNodeRequest) (*Revoked, error) {
	out := new(Revoked)
	if err := c.Invoke(ctx, "/harn.v1.MeshAdmin/RevokeNode", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CARotate calls /harn.v1.MeshAdmin/CARotate.
func (c *AdminClient) CARotate(ctx context.Context, in *AdminEmpty) (*CAStatusResponse, error) {
	out := new(CAStatusResponse)
	if err := c.Invoke(ctx, "/harn.v1.MeshAdmin/CARotate", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CAFinish calls /harn.v1.MeshAdmin/CAFinish.
func (c *AdminClient) CAFinish(ctx context.Context, in *AdminEmpty) (*CAStatusResponse, error) {
	out := new(CAStatusResponse)
	if err := c.Invoke(ctx, "/harn.v1.MeshAdmin/CAFinish", in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CAStatus calls /harn.v1.MeshAdmin/CAStatus.
func (c *AdminClient) CAStatus(ctx context.Context, in *AdminEmpty) (*CAStatusResponse, error) {
	out := new(CAStatusResponse)
	if err := c.Invoke(ctx, "/harn.v1.MeshAdmin/CAStatus", in, out); err != nil {
		return nil, err
	}
	return out, nil
}
