package cli

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/controllers"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/version"
)

type managerOptions struct {
	metricsAddr, probeAddr string
	metricsCertDir         string
	secureMetrics          bool
	leaderElect            bool
	leaderElectionNS       string
	watchNamespaces        []string
	scheduleWorkers        int
	queryWorkers           int
	placeholderImage       string
	resultRoot             string
	maxAttempts            int
	backoff, poll          time.Duration
	planTimeout            time.Duration
	maxPlanSteps           int
	stuckFactor            float64
	stuckMinExtra          time.Duration
	allowedSAs             []string
	zap                    zap.Options
}

func newManagerCommand() *cobra.Command {
	o := &managerOptions{}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the operator: plan every ElasticSchedule, drive its pool and launch its batches",
		Long: `manager runs laxity's controllers against the cluster of --kubeconfig (or
KUBECONFIG, or the in-cluster config), watching all namespaces, or only
those of --watch-namespaces. Leader election is off unless --leader-elect.
No webhook is needed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "address the metrics endpoint binds to (:8080 for plain HTTP with --metrics-secure=false); 0 disables it")
	f.BoolVar(&o.secureMetrics, "metrics-secure", true, "serve metrics over HTTPS with authentication and authorization")
	f.StringVar(&o.metricsCertDir, "metrics-cert-dir", "", "directory holding the metrics server's certificate and key as tls.crt and tls.key (a kubernetes.io/tls Secret mounted there), served as they are renewed, so that scrapers can verify it; empty: a self-signed certificate made at start, which no scraper can verify")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address the health and readiness probes bind to; 0 disables them")
	f.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader, so that only one of several managers acts")
	f.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "namespace of the leader-election Lease; required with --leader-elect when the manager runs outside a cluster (in a cluster: the manager's own namespace)")
	f.StringSliceVar(&o.watchNamespaces, "watch-namespaces", nil, "comma-separated namespaces whose laxity objects, Secrets, SparkApplications and other namespaced objects the manager watches and reads; empty watches all namespaces. Cluster-scoped objects (Nodes, node pools, PriorityClasses) are read cluster-wide either way")
	f.IntVar(&o.scheduleWorkers, "schedule-workers", 4, "how many ElasticSchedules are reconciled at once, so that one slow plan holds back no other schedule")
	f.IntVar(&o.queryWorkers, "query-workers", 4, "how many IntermittentQueries are reconciled at once")
	f.StringVar(&o.placeholderImage, "placeholder-image", "", "container image of the placeholder backend's pods and of the capacityBuffer backend's pod template (a pause image; the buffered pods never run); required by schedules with either backend")
	f.StringVar(&o.resultRoot, "result-root", "laxity-results", "base URI under which steps write their results: <root>/<namespace>/<query>/<step>")
	f.IntVar(&o.maxAttempts, "max-attempts", 3, "tries of one step before its query is re-planned")
	f.DurationVar(&o.backoff, "retry-backoff", 30*time.Second, "wait before retrying a failed step, doubled for each further retry")
	f.DurationVar(&o.poll, "poll", 15*time.Second, "how often schedules with open windows look at their arrivals")
	f.DurationVar(&o.planTimeout, "plan-timeout", controllers.DefaultPlanTimeout, "compute time one plan search may take; a schedule whose search runs longer keeps the plan it has, or gets Planned=False with reason SearchBudgetExceeded")
	f.StringSliceVar(&o.allowedSAs, "allowed-service-accounts", nil, "service accounts (comma-separated names) that SparkApplications may run as in every namespace, each in its own namespace; others need a TenantPolicy's grant (the namespace's \"default\" always may)")
	f.IntVar(&o.maxPlanSteps, "max-plan-steps", planner.DefaultMaxSteps, "most batches and merges one schedule's plan may hold; a larger workload gets Planned=False naming the fields to change")
	f.Float64Var(&o.stuckFactor, "stuck-step-factor", controllers.DefaultStuckFactor, "a step pending or running longer than this many times its modelled duration (and longer than --stuck-step-min-extra more than it) is cancelled and retried")
	f.DurationVar(&o.stuckMinExtra, "stuck-step-min-extra", controllers.DefaultStuckMinExtra, "least time a step may run past its modelled duration before it counts as stuck")
	goFlags := flag.NewFlagSet("manager", flag.ContinueOnError)
	o.zap.BindFlags(goFlags)
	f.AddGoFlagSet(goFlags)
	// The kubeconfig flag controller-runtime registers on the default set.
	if kubeconfig := flag.CommandLine.Lookup("kubeconfig"); kubeconfig != nil {
		f.AddGoFlag(kubeconfig)
	}
	return cmd
}

func (o *managerOptions) run(cmd *cobra.Command) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	if o.scheduleWorkers < 1 || o.queryWorkers < 1 {
		return &usageError{err: fmt.Errorf("manager: --schedule-workers and --query-workers must be at least 1, got %d and %d", o.scheduleWorkers, o.queryWorkers)}
	}
	for _, sa := range o.allowedSAs {
		if errs := validation.IsDNS1123Subdomain(sa); len(errs) > 0 {
			return &usageError{err: fmt.Errorf("manager: --allowed-service-accounts: %q is not a service account name: %s", sa, strings.Join(errs, "; "))}
		}
	}
	if o.planTimeout <= 0 || o.maxPlanSteps < 1 || o.stuckFactor < 1 || o.stuckMinExtra < 0 {
		return &usageError{err: fmt.Errorf("manager: --plan-timeout must be positive, --max-plan-steps at least 1, --stuck-step-factor at least 1 and --stuck-step-min-extra not negative; got %s, %d, %g and %s", o.planTimeout, o.maxPlanSteps, o.stuckFactor, o.stuckMinExtra)}
	}
	if o.leaderElect && o.leaderElectionNS == "" {
		if _, err := os.Stat(inClusterNamespaceFile); err != nil {
			return invalid("manager: --leader-elect: the manager runs outside a cluster (no %s), so it cannot tell which namespace holds its leader-election Lease; give one with --leader-election-namespace", inClusterNamespaceFile)
		}
	}
	if err := checkMetricsCertDir(o.metricsCertDir, o.secureMetrics); err != nil {
		return &usageError{err: fmt.Errorf("manager: --metrics-cert-dir: %w", err)}
	}
	if err := validateNamespaces(o.watchNamespaces); err != nil {
		return &usageError{err: fmt.Errorf("manager: --watch-namespaces: %w", err)}
	}
	logStart(cmd, o.watchNamespaces)
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(laxityv1alpha1.AddToScheme(scheme))

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return invalid("manager: no cluster to talk to: %v (use --kubeconfig or KUBECONFIG)", err)
	}
	metrics := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.secureMetrics, CertDir: o.metricsCertDir}
	if o.secureMetrics {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
		// HTTP/2 stays off: it is exposed to the rapid-reset attacks.
		metrics.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   watchOnly(controllers.CacheOptions(), o.watchNamespaces),
		Client:                  controllers.ClientOptions(),
		Metrics:                 metrics,
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        "laxity.laxity.dev",
		LeaderElectionNamespace: o.leaderElectionNS,
	})
	if err != nil {
		return fmt.Errorf("starting the manager: %w", err)
	}
	if err := controllers.Setup(cmd.Context(), mgr, clock.RealClock{}, o.controllerOptions(), o.placeholderImage); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

func (o *managerOptions) controllerOptions() controllers.Options {
	return controllers.Options{
		MaxAttempts: o.maxAttempts, Backoff: o.backoff, ResultRoot: o.resultRoot, Poll: o.poll,
		ScheduleWorkers: o.scheduleWorkers, QueryWorkers: o.queryWorkers,
		PlanTimeout: o.planTimeout, MaxPlanSteps: o.maxPlanSteps,
		StuckFactor: o.stuckFactor, StuckMinExtra: o.stuckMinExtra,
		AllowedServiceAccounts: o.allowedSAs,
	}
}

// inClusterNamespaceFile holds the namespace of a pod's service account;
// leader election takes its Lease namespace from it when none is given.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// checkMetricsCertDir checks that a certificate directory given holds both
// files: controller-runtime would otherwise serve a self-signed certificate
// in their place, silently, and every verifying scrape would fail.
func checkMetricsCertDir(dir string, secure bool) error {
	if dir == "" {
		return nil
	}
	if !secure {
		return errors.New("given with --metrics-secure=false, which serves no certificate")
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("reading the metrics server's certificate: %w", err)
		}
	}
	return nil
}

// validateNamespaces checks that every name is a namespace name, and that
// none is given twice.
func validateNamespaces(names []string) error {
	seen := map[string]bool{}
	for _, ns := range names {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return fmt.Errorf("%q is not a namespace name: %s", ns, strings.Join(msgs, "; "))
		}
		if seen[ns] {
			return fmt.Errorf("%q is given twice", ns)
		}
		seen[ns] = true
	}
	return nil
}

// watchOnly restricts the cache to the namespaces given, none meaning all.
// controller-runtime keeps cluster-scoped kinds (Nodes, PriorityClasses)
// in a cluster-wide cache of their own either way, and the per-kind label
// selectors of opts still apply within each namespace.
func watchOnly(opts cache.Options, namespaces []string) cache.Options {
	if len(namespaces) == 0 {
		return opts
	}
	opts.DefaultNamespaces = make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	return opts
}

// logStart logs, at info level, what the manager starts with: its version,
// every flag in force (given or defaulted) and the namespaces it watches.
func logStart(cmd *cobra.Command, namespaces []string) {
	v := version.Get()
	var flags []any
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		flags = append(flags, f.Name, f.Value.String())
	})
	watched := "all"
	if len(namespaces) > 0 {
		watched = strings.Join(namespaces, ",")
	}
	ctrl.Log.WithName("setup").Info("Starting the laxity manager", "version", v.Version, "revision", v.Revision, "goVersion", v.GoVersion, "namespaces", watched)
	ctrl.Log.WithName("setup").Info("Flags in force", flags...)
}
