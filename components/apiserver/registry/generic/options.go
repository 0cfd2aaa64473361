package generic

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"orch.io/orch/components/apiserver/storage"
)

// ListOptions are the list query parameters, parsed.
type ListOptions struct {
	Labels               labels.Selector
	Fields               fields.Selector
	Limit                int64
	Continue             string
	ResourceVersion      string
	ResourceVersionMatch metav1.ResourceVersionMatch
}

// Selecting tells whether the options filter by label or field.
func (o ListOptions) Selecting() bool {
	return (o.Labels != nil && !o.Labels.Empty()) || (o.Fields != nil && !o.Fields.Empty())
}

// WatchOptions are the watch query parameters, parsed.
type WatchOptions struct {
	ListOptions
	AllowBookmarks    bool
	SendInitialEvents *bool
	// BookmarkInterval is how often a bookmark is sent when AllowBookmarks; 0 disables.
	BookmarkInterval time.Duration
	// JSON asks for changes as their JSON (WatchEvent.JSON) where it can be cut from the stored form
	// without decoding, for a client that writes JSON: Object is then nil.
	JSON bool
}

// ContinueExpiredMessage is Kubernetes' 410 text for a continue token whose snapshot was compacted.
const ContinueExpiredMessage = "The provided continue parameter is too old to display a consistent list result. " +
	"You can start a new list without the continue parameter, or use the continue token in this response to " +
	"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
	"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
	"show up in the list."

// OptimisticLockMessage is Kubernetes' text for a write against a stale resourceVersion.
const OptimisticLockMessage = "the object has been modified; please apply your changes to the latest version and try again"

// InitialEventsEndAnnotation marks the bookmark that ends the initial events of a watch with
// sendInitialEvents. orch's name, plus Kubernetes' own so client-go's watch-list reflector
// recognises it unchanged.
const (
	InitialEventsEndAnnotation    = "orch.io/initial-events-end"
	K8sInitialEventsEndAnnotation = "k8s.io/initial-events-end"
)

// ParseRevision reads a resourceVersion parameter; "" is 0.
func ParseRevision(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %q", rv))
	}
	return n, nil
}

// TooLargeRevision is Kubernetes' answer to a read at a resourceVersion the store has not reached.
func TooLargeRevision(asked, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", asked, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// StorageError maps a storage failure that has no more specific meaning to a Status.
func StorageError(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 0)
	}
	return apierrors.NewInternalError(err)
}

// Snapshot decides which revision a list reads, following Kubernetes' resourceVersion rules, and
// the key it starts at; revision reads the current one, for the resourceVersion check.
func Snapshot(ctx context.Context, revision func(context.Context) (int64, error), prefix string, o ListOptions) (int64, string, error) {
	if o.ResourceVersionMatch != "" && o.ResourceVersion == "" {
		return 0, "", apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
	}
	if o.Continue != "" {
		if o.ResourceVersion != "" && o.ResourceVersion != "0" {
			return 0, "", apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		start, rev, err := DecodeContinue(o.Continue, prefix)
		if err != nil {
			return 0, "", apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		return max(rev, 0), start, nil
	}
	asked, err := ParseRevision(o.ResourceVersion)
	if err != nil {
		return 0, "", err
	}
	switch o.ResourceVersionMatch {
	case metav1.ResourceVersionMatchExact:
		if asked == 0 {
			return 0, "", apierrors.NewBadRequest("resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"")
		}
		return asked, "", nil
	case "", metav1.ResourceVersionMatchNotOlderThan:
	default:
		return 0, "", apierrors.NewBadRequest(fmt.Sprintf("unsupported resourceVersionMatch %q: supported values: \"Exact\", \"NotOlderThan\"", o.ResourceVersionMatch))
	}
	if asked > 0 {
		current, err := revision(ctx)
		if err != nil {
			return 0, "", StorageError(err)
		}
		if asked > current {
			return 0, "", TooLargeRevision(asked, current)
		}
	}
	return 0, "", nil
}

// WatchStart decides, by Kubernetes' rules, whether a watch first sends the current state and
// from which revision it streams when it does not.
func WatchStart(o WatchOptions) (sendInitial bool, from int64, err error) {
	if from, err = ParseRevision(o.ResourceVersion); err != nil {
		return false, 0, err
	}
	sendInitial = o.ResourceVersion == "" || o.ResourceVersion == "0"
	if o.SendInitialEvents != nil {
		if *o.SendInitialEvents && !o.AllowBookmarks {
			return false, 0, apierrors.NewBadRequest("sendInitialEvents requires allowWatchBookmarks=true")
		}
		if o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
			return false, 0, apierrors.NewBadRequest("sendInitialEvents requires resourceVersionMatch=NotOlderThan")
		}
		sendInitial = *o.SendInitialEvents
	} else if o.ResourceVersionMatch != "" {
		return false, 0, apierrors.NewBadRequest("resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
	}
	return sendInitial, from, nil
}

// ListError maps a storage failure of a list to Kubernetes' answer: 410 for a compacted snapshot
// (with a token to continue inconsistently when paging), 504 for a revision not yet written.
func ListError(ctx context.Context, revision func(context.Context) (int64, error), err error, o ListOptions, prefix, start string) error {
	switch {
	case errors.Is(err, storage.ErrCompacted) && o.Continue != "":
		status := apierrors.NewResourceExpired(ContinueExpiredMessage)
		if token, encErr := EncodeContinue(start, prefix, -1); encErr == nil {
			status.ErrStatus.ListMeta.Continue = token
		}
		return status
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	case errors.Is(err, storage.ErrFutureRevision):
		current, revErr := revision(ctx)
		if revErr != nil {
			return StorageError(revErr)
		}
		asked, _ := strconv.ParseInt(o.ResourceVersion, 10, 64)
		return TooLargeRevision(asked, current)
	}
	return StorageError(err)
}
