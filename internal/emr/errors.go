package emr

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
)

// The services as they are named in errors.
const (
	serviceEMR = "emr-containers"
	serviceEKS = "eks"
)

// AWS error codes this package acts on.
const (
	codeResourceInUse    = "ResourceInUseException"
	codeValidation       = "ValidationException"
	codeInvalidParameter = "InvalidParameterException"
	codeResourceNotFound = "ResourceNotFoundException"
)

// callError is a failed AWS call. It reads "service Operation: Code:
// message", keeping AWS's own code and message for the user, instead of the
// SDK's longer text with the HTTP status and request ID.
type callError struct {
	service, operation string
	err                error
}

func (e *callError) Error() string {
	var apiErr smithy.APIError
	if !errors.As(e.err, &apiErr) {
		return fmt.Sprintf("%s %s: %v", e.service, e.operation, e.err)
	}
	msg := fmt.Sprintf("%s %s: %s: %s", e.service, e.operation, apiErr.ErrorCode(), apiErr.ErrorMessage())
	var maxErr *retry.MaxAttemptsError
	if errors.As(e.err, &maxErr) {
		msg += fmt.Sprintf(" (gave up after %d attempts)", maxErr.Attempt)
	}
	return msg
}

func (e *callError) Unwrap() error { return e.err }

// wrapCall names the service and operation of a failed call; nil stays nil.
func wrapCall(service, operation string, err error) error {
	if err == nil {
		return nil
	}
	return &callError{service: service, operation: operation, err: err}
}

// rejection is a request this package refuses to send, or a Config it
// cannot work with: like an AWS validation error, retrying does not help.
type rejection struct{ msg string }

func (e *rejection) Error() string { return e.msg }

func rejectf(format string, args ...any) error {
	return &rejection{msg: fmt.Sprintf(format, args...)}
}

// sdkRetryables is what the SDK's standard retryer retries: throttling
// codes, 429 and 5xx responses, and broken connections; not a cancelled
// context.
var sdkRetryables = retry.IsErrorRetryables(retry.DefaultRetryables)

// IsRetryable says whether err is worth retrying later as it is:
// throttling, a 5xx response, a broken connection (what the SDK retries
// itself a bounded number of times, still failing when they ran out), or
// ResourceInUseException, an update of the node group already in progress.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	if hasCode(err, codeResourceInUse) {
		return true
	}
	return sdkRetryables.IsErrorRetryable(err) == aws.TrueTernary
}

// IsInvalid says whether err is a request rejected as written, so that
// retrying it unchanged cannot succeed: AWS's ValidationException,
// InvalidParameterException or ResourceNotFoundException (a virtual cluster,
// node group or job run that does not exist), or a request or Config this
// package refuses. Its message is meant for the user, e.g. in a condition.
func IsInvalid(err error) bool {
	var r *rejection
	if errors.As(err, &r) {
		return true
	}
	return hasCode(err, codeValidation, codeInvalidParameter, codeResourceNotFound)
}

// hasCode says whether err is an AWS error with one of codes.
func hasCode(err error, codes ...string) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	for _, code := range codes {
		if apiErr.ErrorCode() == code {
			return true
		}
	}
	return false
}
