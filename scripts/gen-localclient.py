#!/usr/bin/env python3
"""Writes node/api/local_client.pb.go: the local wire client's methods, one
per unary method of the generated Local and MeshAdmin gRPC clients
(node/api/apigrpc/services_grpc.pb.go). `make proto` runs it;
TestLocalClientHasEveryMethod checks that the two agree."""
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
src = open(root + "/node/api/apigrpc/services_grpc.pb.go").read()


def methods(iface):
    m = re.search(r"type " + iface + r" interface \{(.*?)\n\}", src, re.S)
    out = []
    for line in m.group(1).split("\n"):
        mm = re.match(r"\s*(\w+)\(ctx context\.Context, in \*api\.(\w+), opts \.\.\.grpc\.CallOption\) \(\*api\.(\w+), error\)", line)
        if mm:
            out.append(mm.groups())
        elif re.match(r"\s*\w+\(", line):
            sys.exit("gen-localclient: not a unary method: " + line.strip())
    return out


def gen(svc, typ):
    s = ""
    for name, req, resp in methods(svc + "Client"):
        s += f'''
// {name} calls /harn.v1.{svc}/{name}.
func (c *{typ}) {name}(ctx context.Context, in *{req}) (*{resp}, error) {{
	out := new({resp})
	if err := c.Invoke(ctx, "/harn.v1.{svc}/{name}", in, out); err != nil {{
		return nil, err
	}}
	return out, nil
}}
'''
    return s


hdr = '''// Code generated from node/api/apigrpc/services_grpc.pb.go by
// scripts/gen-localclient.py. DO NOT EDIT.

package api

import "context"
'''
open(root + "/node/api/local_client.pb.go", "w").write(hdr + gen("Local", "Client") + gen("MeshAdmin", "AdminClient"))
