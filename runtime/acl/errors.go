//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"fmt"

	"github.com/irtool/irtool/runtime/device"
)

// Error is a failed ACL or aclnn call. It wraps the *device.ACLError the
// runtime understands (device.ErrorCode finds its code) and adds the
// kernel the call was made for.
type Error struct {
	// ACL is the call, its status code and the text of
	// aclGetRecentErrMsg() read right after it, on the same thread.
	ACL *device.ACLError
	// Kernel names the launch: aclnn operator, IR op and node, or "".
	Kernel string
}

func (e *Error) Error() string {
	msg := e.ACL.Msg
	if msg == "" {
		msg = "(aclGetRecentErrMsg: no message)"
	}
	where := ""
	if e.Kernel != "" {
		where = " [" + e.Kernel + "]"
	}
	return fmt.Sprintf("acl: %s%s: error %d (%s): %s", e.ACL.Call, where, e.ACL.Code, codeName(e.ACL.Code), msg)
}

// Unwrap returns the runtime error, so errors.As finds a *device.ACLError.
func (e *Error) Unwrap() error { return e.ACL }

// newError converts a non-zero status: it must be called on the thread
// that made the call, before any other ACL call, to read its message.
func newError(call, kernel string, code int32) *Error {
	msg := ""
	if code == C.IRT_NOT_LOADED {
		msg = call + " is not exported by the loaded CANN libraries"
	} else if m := C.irt_errmsg(); m != nil {
		msg = C.GoString(m)
	}
	return &Error{ACL: &device.ACLError{Call: call, Code: device.ACLCode(code), Msg: msg}, Kernel: kernel}
}

// bindingError is an error the binding itself raises before or instead of
// a CANN call (a descriptor CANN cannot express, a workspace larger than
// planned), with the ACL code the situation corresponds to.
func bindingError(call, kernel string, code device.ACLCode, format string, args ...any) *Error {
	return &Error{ACL: &device.ACLError{Call: call, Code: code, Msg: fmt.Sprintf(format, args...)}, Kernel: kernel}
}

// codeName names the aclnn codes device.ACLCode does not know.
func codeName(c device.ACLCode) string {
	switch c {
	case C.ACLNN_ERR_PARAM_NULLPTR:
		return "ACLNN_ERR_PARAM_NULLPTR"
	case C.ACLNN_ERR_PARAM_INVALID:
		return "ACLNN_ERR_PARAM_INVALID"
	case C.ACLNN_ERR_RUNTIME_ERROR:
		return "ACLNN_ERR_RUNTIME_ERROR"
	case C.ACLNN_ERR_INNER:
		return "ACLNN_ERR_INNER"
	case C.ACL_ERROR_INVALID_PARAM:
		return "ACL_ERROR_INVALID_PARAM"
	case C.ACL_ERROR_UNINITIALIZE:
		return "ACL_ERROR_UNINITIALIZE"
	case C.ACL_ERROR_REPEAT_INITIALIZE:
		return "ACL_ERROR_REPEAT_INITIALIZE"
	case C.ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD:
		return "ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD"
	case C.IRT_NOT_LOADED:
		return "not loaded"
	}
	return c.String()
}
