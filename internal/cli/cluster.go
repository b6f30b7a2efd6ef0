package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/manifest"
)

// clusterOptions are the flags that make plan read a cluster instead of
// files, named and resolved as kubectl resolves them: --kubeconfig, then
// KUBECONFIG, then ~/.kube/config; the current context unless --context;
// the context's namespace unless -n; every namespace with -A.
type clusterOptions struct {
	kubeconfig    string
	context       string
	namespace     string
	allNamespaces bool
	// where describes the cluster once read, for messages.
	where string
}

var clusterFlags = []string{"kubeconfig", "context", "namespace", "all-namespaces"}

func (c *clusterOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.kubeconfig, "kubeconfig", "", "read the objects from the cluster of this kubeconfig file instead of -f (default: KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&c.context, "context", "", "the kubeconfig context to read the cluster of (default: the current context)")
	f.StringVarP(&c.namespace, "namespace", "n", "", "the namespace to read from the cluster (default: the context's namespace, or default)")
	f.BoolVarP(&c.allNamespaces, "all-namespaces", "A", false, "read every namespace of the cluster")
}

// given reports whether any flag asks for a cluster.
func (c *clusterOptions) given(cmd *cobra.Command) bool {
	return slices.ContainsFunc(clusterFlags, func(name string) bool { return cmd.Flags().Changed(name) })
}

// describe names the cluster and namespaces read, for messages.
func (c *clusterOptions) describe() string {
	return c.where
}

// read lists the ElasticSchedules, IntermittentQueries and RecurringQueries
// of the cluster as a manifest.Set: the API server has validated and
// defaulted them already, so they plan exactly as their manifests do.
// Objects being deleted are left out, as the operator leaves them out.
func (c *clusterOptions) read(ctx context.Context) (*manifest.Set, error) {
	if c.allNamespaces && c.namespace != "" {
		return nil, errors.New("plan: -n and -A: give a namespace or every namespace, not both")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.context})
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("plan: reading the kubeconfig: %w", err)
	}
	contextName := cmp.Or(c.context, raw.CurrentContext)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("plan: no cluster to read: %w", err)
	}
	if c.namespace == "" && !c.allNamespaces {
		if c.namespace, _, err = loader.Namespace(); err != nil {
			return nil, fmt.Errorf("plan: the namespace of context %q: %w", contextName, err)
		}
	}
	c.where = fmt.Sprintf("context %s", contextName)
	if contextName == "" {
		c.where = "cluster " + cfg.Host
	}
	scope := []client.ListOption{client.InNamespace(c.namespace)}
	if c.allNamespaces {
		c.where += ", all namespaces"
		scope = nil
	} else {
		c.where += ", namespace " + c.namespace
	}

	scheme := runtime.NewScheme()
	if err := laxityv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("plan: %s: %w", c.where, err)
	}
	var (
		schedules laxityv1alpha1.ElasticScheduleList
		queries   laxityv1alpha1.IntermittentQueryList
		recurring laxityv1alpha1.RecurringQueryList
	)
	for _, list := range []client.ObjectList{&schedules, &queries, &recurring} {
		if err := cl.List(ctx, list, scope...); err != nil {
			if meta.IsNoMatchError(err) {
				return nil, fmt.Errorf("plan: %s: laxity is not installed there: the API server does not serve laxity.dev/v1alpha1 (%w)", c.where, err)
			}
			return nil, fmt.Errorf("plan: %s: listing %T: %w", c.where, list, err)
		}
	}
	set := &manifest.Set{}
	var errs []error
	// Messages name the object after its source, as for a file.
	source := manifest.Source{File: c.where}
	for i := range schedules.Items {
		es := &schedules.Items[i]
		if es.DeletionTimestamp != nil {
			continue
		}
		if err := es.DecodeError(); err != nil {
			errs = append(errs, fmt.Errorf("%s: ElasticSchedule %s/%s: %w", c.where, es.Namespace, es.Name, err))
			continue
		}
		set.Schedules = append(set.Schedules, manifest.ElasticSchedule{Source: source, Object: es})
	}
	for i := range queries.Items {
		q := &queries.Items[i]
		if q.DeletionTimestamp != nil {
			continue
		}
		if err := q.DecodeError(); err != nil {
			errs = append(errs, fmt.Errorf("%s: IntermittentQuery %s/%s: %w", c.where, q.Namespace, q.Name, err))
			continue
		}
		set.Queries = append(set.Queries, manifest.IntermittentQuery{Source: source, Object: q})
	}
	for i := range recurring.Items {
		rq := &recurring.Items[i]
		if rq.DeletionTimestamp != nil {
			continue
		}
		set.Recurring = append(set.Recurring, manifest.RecurringQuery{Source: source, Object: rq})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return set, nil
}
