package target

import "github.com/irtool/irtool/ir"

// AclnnWorkspace is the workspace, in bytes, that phase 1 of aclnn
// operator call (aclnnXxxGetWorkspaceSize) asks for when it runs as part
// of node n: the one definition of each size the plans reserve
// (Profile.Workspace adds the largest over a node's calls to its
// kernel's workspace, after the recipe's staging and scratch).
//
// CANN's operator pages publish no formula for these sizes. runtime/acl's
// emulator (runtime/acl/fakeacl) models every operator the binding calls
// as asking for none, so each is 0 here; runtime/acl's
// TestAclnnWorkspacesWithinPlan runs the reference models through the
// emulator and checks that every answer fits what the plan left its
// kernel (no call falls back to the stream reserve). On a device an
// operator asking for more than the plan left uses the stream's reserve
// (acl.Options.WorkspaceReserve, device_memory.reserve_bytes); a size
// measured on a device belongs here.
func AclnnWorkspace(call string, n *ir.Node) int64 { return 0 }

// callsWorkspace is the largest AclnnWorkspace of a node's calls.
func callsWorkspace(n *ir.Node, s Support) int64 {
	var ws int64
	for _, c := range s.Calls {
		ws = max(ws, AclnnWorkspace(c, n))
	}
	return ws
}
