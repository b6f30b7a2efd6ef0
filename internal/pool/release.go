package pool

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// ErrKindNotServed is wrapped, together with ErrInvalidBackend, by the error
// New returns when the API server serves no kind of the scale backend's
// apiVersion, for example because the CRD of the pool target has been
// removed. Nothing of such a pool can be resized, so nothing is left to
// release either.
var ErrKindNotServed = errors.New("the kind of the pool target is not served")

// Released is what releasing a pool found.
type Released struct {
	// Nothing says that there was nothing to release: no placeholder
	// Deployment or CapacityBuffer, a scale target that does not exist, a
	// kind that is not served, or a namespace being deleted that refused
	// to create the object releasing would have written. The pool holds no
	// nodes of the schedule either way.
	Nothing bool
	// Why says, in plain words, why there was nothing to release.
	Why string
}

// Releaser is a Backend that can return its pool to zero nodes without
// creating anything, and say whether it found anything to release. Every
// backend of this package is a Releaser; their Request(0) is Release.
type Releaser interface {
	Release(ctx context.Context) (Released, error)
}

// Release returns the pool to zero nodes. It never creates an object: a
// missing placeholder Deployment, a missing scale target or a target kind
// the API server no longer serves means that the pool is already released,
// and so does a create the API server refuses because the namespace is being
// deleted. A Backend that is no Releaser gets Request(0), whose errors are
// read the same way.
func Release(ctx context.Context, b Backend) (Released, error) {
	if r, ok := b.(Releaser); ok {
		return r.Release(ctx)
	}
	err := b.Request(ctx, 0)
	if err == nil {
		return Released{}, nil
	}
	if why, ok := NothingToRelease(err); ok {
		return Released{Nothing: true, Why: why}, nil
	}
	return Released{}, err
}

// NothingToRelease says whether err, from New, Request(0) or Release, means
// that the pool has nothing to release, and why: the target does not exist,
// its kind is not served, or the namespace is being deleted and refuses new
// objects.
func NothingToRelease(err error) (string, bool) {
	switch {
	case err == nil:
		return "", false
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return "the namespace is being deleted and refuses new objects: " + err.Error(), true
	case errors.Is(err, ErrKindNotServed), meta.IsNoMatchError(err):
		return "the kind of the pool target is not served: " + err.Error(), true
	case apierrors.IsNotFound(err):
		return "the pool target does not exist: " + err.Error(), true
	}
	return "", false
}

// releasedNothing is a Released with nothing to release, for why.
func releasedNothing(format string, args ...any) Released {
	return Released{Nothing: true, Why: fmt.Sprintf(format, args...)}
}
