package tenancy

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The sparkConf keys through which Spark on Kubernetes picks service
// accounts, mounts host paths and reads pod templates: the template's
// fields are not the only way to ask for them. Keys are compared in lower
// case.
const (
	confDriverServiceAccount   = "spark.kubernetes.authenticate.driver.serviceaccountname"
	confExecutorServiceAccount = "spark.kubernetes.authenticate.executor.serviceaccountname"
	confDriverPodTemplate      = "spark.kubernetes.driver.podtemplatefile"
	confExecutorPodTemplate    = "spark.kubernetes.executor.podtemplatefile"
)

// Pod Security levels, from the least to the most permissive
// (https://kubernetes.io/docs/concepts/security/pod-security-standards/).
const (
	LevelRestricted = "restricted"
	LevelBaseline   = "baseline"
	LevelPrivileged = "privileged"
)

// QueueKeys are the pod labels and annotations through which batch
// schedulers read a pod's queue: YuniKorn's annotation and legacy label,
// Volcano's annotation. A queue is shared by every namespace the scheduler
// serves, so naming one needs a grant.
var QueueKeys = []string{"yunikorn.apache.org/queue", "queue", "scheduling.volcano.sh/queue-name"}

// escapingConf are the Spark settings (lower case) that choose where and as
// whom spark-submit, which spark-operator runs with its own cluster-wide
// identity, creates the driver: the namespace, the API server, how it
// authenticates, a client-mode driver inside spark-operator, files and
// classes of spark-operator's own disk. No grant allows them: laxity
// pins them all to the query's namespace and the cluster it runs in.
var escapingConf = map[string]string{
	"spark.kubernetes.namespace":                 "the namespace the driver is created in",
	"spark.master":                               "the cluster the application is submitted to",
	"spark.kubernetes.driver.master":             "the API server the driver talks to",
	"spark.submit.deploymode":                    "a client-mode driver, which runs inside spark-operator",
	"spark.kubernetes.file.upload.path":          "uploading spark-operator's local files",
	"spark.kubernetes.context":                   "a context of spark-operator's kubeconfig",
	"spark.kubernetes.trust.certificates":        "trusting any API server certificate",
	"spark.kubernetes.submitindriver":            "submitting from the driver",
	"spark.kubernetes.driver.pod.name":           "adopting an existing pod as the driver",
	"spark.kubernetes.driver.pod.featuresteps":   "code run by spark-operator's submission client",
	"spark.kubernetes.executor.pod.featuresteps": "code run by spark-operator's submission client",
	"spark.jars.ivysettings":                     "an Ivy settings file of spark-operator's disk",
	"spark.jars.ivy":                             "an Ivy directory of spark-operator's disk",
}

// escapingConfPrefixes are prefixes (lower case) of escaping settings: the
// API server credentials of the submission client, driver and executors
// (spark.kubernetes.authenticate.*, but for the service account names,
// which are a grant) and Kerberos credentials read from spark-operator's
// disk.
var escapingConfPrefixes = map[string]string{
	"spark.kubernetes.authenticate.": "credentials for the API server",
	"spark.kerberos.":                "Kerberos credentials of spark-operator's disk",
	"spark.kubernetes.kerberos.":     "Kerberos credentials of spark-operator's disk",
}

// fileListConf are the settings (lower case) whose values are lists of
// files spark-submit reads or uploads; a file of its own disk (file: or no
// scheme) would be spark-operator's.
var fileListConf = map[string]bool{
	"spark.jars": true, "spark.files": true, "spark.submit.pyfiles": true, "spark.archives": true,
}

// javaOptionConf are the settings (lower case, or prefixes ending in ".")
// whose values reach a JVM's command line or environment, where
// -Dspark.<key>=<value> sets a Spark setting too.
var javaOptionConf = []string{
	"spark.driver.extrajavaoptions", "spark.executor.extrajavaoptions",
	"spark.kubernetes.driverenv.", "spark.executorenv.",
}

// confKey is what a Spark setting's name may look like. Anything else
// (spaces, control or non-ASCII characters, "=") is refused rather than
// guessed at: Spark compares names exactly, and a name that only looks
// like a harmless one must not slip past the rules.
var confKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)

// javaOption finds -Dspark.<key>=<value> in a command line or environment
// value.
var javaOption = regexp.MustCompile(`-D(spark\.[^=\s"']+)=([^\s"']*)`)

// Template decides whether the namespace's SparkApplications may be made
// from spec, a query's SparkApplication template (the spec of a
// SparkApplication as decoded from JSON), whose path is field
// (spec.sparkApplication). It returns every refusal, in a fixed order.
//
// Never allowed, whatever is granted, because spark-operator would act on
// them with its own identity (Escape): a sparkConf setting or
// -Dspark.* option that chooses the namespace, the master or API server,
// credentials or the submission client's files (escapingConf), a mode
// other than cluster, proxyUser, driver.kubernetesMaster, a pod template's
// namespace, files of spark-operator's disk (a file: or scheme-less
// mainApplicationFile, deps or spark.jars/files), Spark UI Ingresses the
// template configures and UI Services reachable from outside the cluster,
// and laxity's own labels set through sparkConf.
//
// Allowed only where granted:
//
//   - the service accounts the driver and executors run as
//     (driver.serviceAccount, executor.serviceAccount, a pod template's
//     serviceAccountName and the sparkConf keys that name one) must be
//     allowed (Namespace.ServiceAccount);
//   - priority classes (driver/executor.priorityClassName,
//     batchSchedulerOptions.priorityClassName, a pod template's),
//     schedulers (batchScheduler, schedulerName,
//     spark.kubernetes.scheduler.name) and batch-scheduler queues
//     (batchSchedulerOptions.queue, QueueKeys as labels or annotations);
//   - hostPath volumes (volumes, a pod template's volumes, sparkConf
//     spark.kubernetes.*.volumes.hostPath.*) need allowHostPath;
//   - privileged containers, added capabilities, the host's network, PID
//     or IPC namespace, and pod template files or Spark ConfigMaps laxity
//     cannot read need allowPrivileged.
//
// The rest of the pods' security (users, seccomp, volume types) is held to
// the namespace's Pod Security level by the caller, which may import the
// Pod Security admission library; ConfVolumeTypes lists the volumes that
// sparkConf adds, for it.
//
// Secrets, ConfigMaps and persistent volume claims the template names are
// the query's namespace's own: spark-operator resolves them in the
// SparkApplication's namespace, which laxity pins. Fields of the wrong
// type are left to the template's own validation.
func (n Namespace) Template(field string, spec map[string]any) []*Refusal {
	c := &templateCheck{n: n}
	c.submission(field, spec)
	for _, role := range []string{"driver", "executor"} {
		pod, _ := spec[role].(map[string]any)
		if pod == nil {
			continue
		}
		at := field + "." + role
		if sa, ok := pod["serviceAccount"].(string); ok && sa != "" {
			c.add(n.ServiceAccount(at+".serviceAccount", sa))
		}
		if on, _ := pod["hostNetwork"].(bool); on {
			c.add(n.Privileged(at+".hostNetwork", "the host's network"))
		}
		if role == "driver" {
			if master, ok := pod["kubernetesMaster"].(string); ok && master != "" {
				c.add(n.Escape(at+".kubernetesMaster", "the API server the driver talks to ("+master+")"))
			}
		}
		if pc, ok := pod["priorityClassName"].(string); ok && pc != "" {
			c.add(n.SparkPriorityClass(at+".priorityClassName", pc))
		}
		if s, ok := pod["schedulerName"].(string); ok {
			c.add(n.Scheduler(at+".schedulerName", s))
		}
		c.queues(at+".labels", pod["labels"])
		c.queues(at+".annotations", pod["annotations"])
		c.javaOptions(at+".javaOptions", pod["javaOptions"])
		c.env(at, pod)
		c.container(at, pod)
		for _, list := range []string{"sidecars", "initContainers"} {
			items, _ := pod[list].([]any)
			for i, item := range items {
				if container, ok := item.(map[string]any); ok {
					c.container(fmt.Sprintf("%s.%s[%d]", at, list, i), container)
					c.env(fmt.Sprintf("%s.%s[%d]", at, list, i), container)
				}
			}
		}
		if tmpl, ok := pod["template"].(map[string]any); ok {
			if md, ok := tmpl["metadata"].(map[string]any); ok {
				if ns, ok := md["namespace"].(string); ok && ns != "" && ns != n.Name {
					c.add(n.Escape(at+".template.metadata.namespace", "pods in namespace "+ns))
				}
				c.queues(at+".template.metadata.labels", md["labels"])
				c.queues(at+".template.metadata.annotations", md["annotations"])
			}
			if podSpec, ok := tmpl["spec"].(map[string]any); ok {
				c.podSpec(at+".template.spec", podSpec)
			}
		}
	}
	c.volumes(field+".volumes", spec["volumes"])
	if conf, ok := spec["sparkConf"].(map[string]any); ok {
		c.sparkConf(field+".sparkConf", conf)
	}
	return c.refusals
}

type templateCheck struct {
	n        Namespace
	refusals []*Refusal
}

func (c *templateCheck) add(r *Refusal) {
	if r != nil {
		c.refusals = append(c.refusals, r)
	}
}

// submission checks the fields of the spec that spark-operator's
// submission client acts on with its own identity, and the batch
// scheduler.
func (c *templateCheck) submission(field string, spec map[string]any) {
	if mode, ok := spec["mode"].(string); ok && mode != "" && mode != "cluster" {
		c.add(c.n.Escape(field+".mode", fmt.Sprintf("mode %q, which runs the driver inside spark-operator", mode)))
	}
	if user, ok := spec["proxyUser"].(string); ok && user != "" {
		c.add(c.n.Escape(field+".proxyUser", "submitting as user "+user))
	}
	if cm, ok := spec["sparkConfigMap"].(string); ok && cm != "" {
		c.add(c.n.Privileged(field+".sparkConfigMap", "Spark settings in ConfigMap "+cm+", which laxity cannot inspect"))
	}
	c.exposure(field, spec)
	c.file(field+".mainApplicationFile", spec["mainApplicationFile"])
	if deps, ok := spec["deps"].(map[string]any); ok {
		for _, list := range []string{"jars", "files", "pyFiles", "archives"} {
			items, _ := deps[list].([]any)
			for i, item := range items {
				c.file(fmt.Sprintf("%s.deps.%s[%d]", field, list, i), item)
			}
		}
	}
	if s, ok := spec["batchScheduler"].(string); ok {
		c.add(c.n.Scheduler(field+".batchScheduler", s))
	}
	if opts, ok := spec["batchSchedulerOptions"].(map[string]any); ok {
		if q, ok := opts["queue"].(string); ok && q != "" {
			c.add(c.n.SchedulerQueue(field+".batchSchedulerOptions.queue", q))
		}
		if pc, ok := opts["priorityClassName"].(string); ok && pc != "" {
			c.add(c.n.SparkPriorityClass(field+".batchSchedulerOptions.priorityClassName", pc))
		}
	}
	args, _ := spec["arguments"].([]any)
	for i, a := range args {
		c.javaOptions(fmt.Sprintf("%s.arguments[%d]", field, i), a)
	}
}

// exposure checks the Ingresses and Services spark-operator makes for the
// Spark UI with its own identity: a tenant that may not write an Ingress
// or a LoadBalancer Service itself must not have spark-operator write one
// for it (ingress annotations configure the cluster's ingress controller).
func (c *templateCheck) exposure(field string, spec map[string]any) {
	if ui, ok := spec["sparkUIOptions"].(map[string]any); ok {
		for _, k := range []string{"ingressAnnotations", "ingressTLS"} {
			if v, ok := ui[k]; ok && v != nil {
				c.add(c.n.Escape(field+".sparkUIOptions."+k, "an Ingress configured by the template, which spark-operator writes with its own identity"))
			}
		}
		if t, ok := ui["serviceType"].(string); ok && t != "" && t != "ClusterIP" {
			c.add(c.n.Escape(field+".sparkUIOptions.serviceType", "a Spark UI Service of type "+t+", reachable from outside the cluster"))
		}
	}
	if list, ok := spec["driverIngressOptions"].([]any); ok && len(list) > 0 {
		c.add(c.n.Escape(field+".driverIngressOptions", "Ingresses and Services spark-operator writes with its own identity"))
	}
}

// file checks a file spark-submit reads: one of its own disk (a file: URI
// or a path without a scheme) would be spark-operator's.
func (c *templateCheck) file(field string, v any) {
	s, ok := v.(string)
	if !ok || s == "" {
		return
	}
	if localFile(s) {
		c.add(c.n.Escape(field, fmt.Sprintf("file %q of spark-operator's own disk (use local:// for a file of the image, or a remote URI)", s)))
	}
}

// localFile says whether uri names a file of the submitting machine's
// disk: the file scheme, or no scheme.
func localFile(uri string) bool {
	u := strings.TrimSpace(uri)
	scheme, _, found := strings.Cut(u, ":")
	if !found || strings.ContainsAny(scheme, "/\\") {
		return true
	}
	return strings.EqualFold(strings.TrimSpace(scheme), "file")
}

// container checks a container's (or a Spark pod's) securityContext.
func (c *templateCheck) container(at string, container map[string]any) {
	sc, _ := container["securityContext"].(map[string]any)
	if sc == nil {
		return
	}
	if on, _ := sc["privileged"].(bool); on {
		c.add(c.n.Privileged(at+".securityContext.privileged", "a privileged container"))
	}
	if caps, ok := sc["capabilities"].(map[string]any); ok {
		if added, _ := caps["add"].([]any); len(added) > 0 {
			c.add(c.n.Privileged(at+".securityContext.capabilities.add", fmt.Sprintf("adding capabilities %v", added)))
		}
	}
}

// env checks a container's (or a Spark pod's) environment for Spark
// settings passed as JVM options (JAVA_TOOL_OPTIONS, SPARK_JAVA_OPT_*,
// ...): env (a list of variables) and envVars (a map).
func (c *templateCheck) env(at string, container map[string]any) {
	list, _ := container["env"].([]any)
	for i, item := range list {
		if v, ok := item.(map[string]any); ok {
			c.javaOptions(fmt.Sprintf("%s.env[%d].value", at, i), v["value"])
		}
	}
	vars, _ := container["envVars"].(map[string]any)
	for _, k := range sortedKeys(vars) {
		c.javaOptions(fmt.Sprintf("%s.envVars[%q]", at, k), vars[k])
	}
}

// javaOptions checks the -Dspark.<key>=<value> options in v, a string, as
// Spark settings: the JVM makes them settings of the driver's or
// executor's Spark.
func (c *templateCheck) javaOptions(at string, v any) {
	s, _ := v.(string)
	for _, m := range javaOption.FindAllStringSubmatch(s, -1) {
		c.setting(fmt.Sprintf("%s (-D%s)", at, m[1]), m[1], m[2])
	}
}

// queues checks labels or annotations for a batch-scheduler queue.
func (c *templateCheck) queues(at string, v any) {
	m, _ := v.(map[string]any)
	for _, k := range sortedKeys(m) {
		if slices.Contains(QueueKeys, strings.ToLower(strings.TrimSpace(k))) {
			q, _ := m[k].(string)
			c.add(c.n.SchedulerQueue(fmt.Sprintf("%s[%q]", at, k), q))
		}
	}
}

// podSpec checks a Kubernetes pod spec (a Spark pod template's).
func (c *templateCheck) podSpec(at string, spec map[string]any) {
	for _, key := range []string{"serviceAccountName", "serviceAccount"} {
		if sa, ok := spec[key].(string); ok && sa != "" {
			c.add(c.n.ServiceAccount(at+"."+key, sa))
		}
	}
	for _, key := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		if on, _ := spec[key].(bool); on {
			c.add(c.n.Privileged(at+"."+key, "the host's "+strings.TrimPrefix(key, "host")+" namespace"))
		}
	}
	if pc, ok := spec["priorityClassName"].(string); ok && pc != "" {
		c.add(c.n.SparkPriorityClass(at+".priorityClassName", pc))
	}
	if s, ok := spec["schedulerName"].(string); ok {
		c.add(c.n.Scheduler(at+".schedulerName", s))
	}
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		items, _ := spec[list].([]any)
		for i, item := range items {
			if container, ok := item.(map[string]any); ok {
				c.container(fmt.Sprintf("%s.%s[%d]", at, list, i), container)
				c.env(fmt.Sprintf("%s.%s[%d]", at, list, i), container)
			}
		}
	}
	c.volumes(at+".volumes", spec["volumes"])
}

// volumes checks a list of Kubernetes volumes for hostPath ones.
func (c *templateCheck) volumes(at string, list any) {
	items, _ := list.([]any)
	for i, item := range items {
		volume, _ := item.(map[string]any)
		if _, ok := volume["hostPath"]; ok {
			c.add(c.n.HostPath(fmt.Sprintf("%s[%d].hostPath", at, i)))
		}
	}
}

// sparkConf checks every Spark setting, in key order.
func (c *templateCheck) sparkConf(at string, conf map[string]any) {
	for _, k := range sortedKeys(conf) {
		value, _ := conf[k].(string)
		c.setting(fmt.Sprintf("%s[%q]", at, k), k, value)
	}
}

// setting checks one Spark setting, named key (as written), which field
// names.
func (c *templateCheck) setting(field, key, value string) {
	if !confKey.MatchString(key) {
		c.add(c.n.Escape(field, fmt.Sprintf("a setting name %q that is not plainly one Spark setting (only letters, digits, '.', '_', '-' and '/')", key)))
		return
	}
	k := strings.ToLower(key)
	role, rest := confRole(k)
	switch {
	case k == confDriverServiceAccount || k == confExecutorServiceAccount:
		c.add(c.n.ServiceAccount(field, value))
	case escapingConf[k] != "":
		c.add(c.n.Escape(field, escapingConf[k]))
	case escapingPrefix(k) != "":
		c.add(c.n.Escape(field, escapingPrefix(k)))
	case k == confDriverPodTemplate || k == confExecutorPodTemplate:
		c.add(c.n.Privileged(field, "a pod template file laxity cannot inspect"))
	case k == "spark.kubernetes.scheduler.name" || (role != "" && rest == "scheduler.name"):
		c.add(c.n.Scheduler(field, value))
	case k == "spark.kubernetes.scheduler.volcano.podgrouptemplatefile":
		c.add(c.n.SchedulerQueue(field, "a pod group template file laxity cannot inspect"))
	case role != "" && strings.HasPrefix(rest, "volumes.hostpath."):
		c.add(c.n.HostPath(field))
	case role != "" && (strings.HasPrefix(rest, "label.") || strings.HasPrefix(rest, "annotation.")):
		// The label's or annotation's own key keeps its case.
		_, name, _ := strings.Cut(key[len("spark.kubernetes.")+len(role)+1:], ".")
		switch {
		case laxityKey(name):
			c.add(c.n.Escape(field, fmt.Sprintf("laxity's own label or annotation %s, which tells whose pods these are", name)))
		case slices.Contains(QueueKeys, strings.ToLower(name)):
			c.add(c.n.SchedulerQueue(field, value))
		}
	case fileListConf[k]:
		for i, f := range strings.Split(value, ",") {
			if strings.TrimSpace(f) != "" && localFile(f) {
				c.add(c.n.Escape(fmt.Sprintf("%s (entry %d)", field, i), fmt.Sprintf("file %q of spark-operator's own disk", strings.TrimSpace(f))))
			}
		}
	}
	for _, p := range javaOptionConf {
		if k == p || (strings.HasSuffix(p, ".") && strings.HasPrefix(k, p)) {
			c.javaOptions(field, value)
		}
	}
}

// confRole splits a lower-case spark.kubernetes.{driver,executor}.<rest>
// setting; role is "" for others.
func confRole(k string) (role, rest string) {
	for _, r := range []string{"driver", "executor"} {
		if rest, ok := strings.CutPrefix(k, "spark.kubernetes."+r+"."); ok {
			return r, rest
		}
	}
	return "", ""
}

func escapingPrefix(k string) string {
	for _, p := range sortedKeys(escapingConfPrefixes) {
		if strings.HasPrefix(k, p) {
			return escapingConfPrefixes[p]
		}
	}
	return ""
}

// laxityKey says whether a label or annotation key is one laxity sets on
// the pods it runs: laxity.dev/* and app.kubernetes.io/managed-by.
func laxityKey(key string) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	return strings.HasPrefix(k, "laxity.dev/") || k == "app.kubernetes.io/managed-by"
}

// ConfVolumeTypes are the volumes the template's sparkConf adds to the
// driver's or executor's pod (role), spark.kubernetes.<role>.volumes.<type>.<name>.*,
// as volume name to Kubernetes volume type (hostPath, emptyDir, nfs,
// persistentVolumeClaim), for the Pod Security evaluation. Names are as
// written; types as Spark spells them.
func ConfVolumeTypes(spec map[string]any, role string) map[string]string {
	conf, _ := spec["sparkConf"].(map[string]any)
	out := map[string]string{}
	prefix := "spark.kubernetes." + role + ".volumes."
	for _, k := range sortedKeys(conf) {
		if len(k) <= len(prefix) || !strings.EqualFold(k[:len(prefix)], prefix) {
			continue
		}
		parts := strings.SplitN(k[len(prefix):], ".", 3)
		if len(parts) < 3 || parts[0] == "" || parts[1] == "" {
			continue
		}
		out[parts[1]] = parts[0]
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Escape is the refusal of what field asks spark-operator to do with its
// own identity, outside the query's namespace and cluster: no grant allows
// it.
func (n Namespace) Escape(field, what string) *Refusal {
	return &Refusal{
		Field: field, What: what,
		Missing: fmt.Sprintf("laxity runs a query's SparkApplications in the query's own namespace (%s), on this cluster's API server, with credentials the namespace is granted; no grant allows it, remove the field", n.Name),
	}
}

// SparkPriorityClass decides whether the namespace's SparkApplications'
// pods may have the PriorityClass name, which field names.
func (n Namespace) SparkPriorityClass(field, name string) *Refusal {
	if name == "" || n.granted(func(g Grant) []string { return g.PriorityClasses }, name) {
		return nil
	}
	return &Refusal{
		Field: field, What: "Spark pods at PriorityClass " + name,
		Missing: n.policyHint("priorityClasses") + "; leave it unset for the cluster's default priority",
	}
}

// Scheduler decides whether the namespace's SparkApplications' pods may
// be placed by the scheduler name, which field names; the default
// scheduler ("" or default-scheduler) needs no grant.
func (n Namespace) Scheduler(field, name string) *Refusal {
	if name == "" || name == "default-scheduler" || n.granted(func(g Grant) []string { return g.Schedulers }, name) {
		return nil
	}
	return &Refusal{
		Field: field, What: "scheduling with " + name,
		Missing: n.policyHint("schedulers") + "; leave it unset for the cluster's default scheduler",
	}
}

// SchedulerQueue decides whether the namespace's SparkApplications may
// submit to the batch-scheduler queue name, which field names.
func (n Namespace) SchedulerQueue(field, name string) *Refusal {
	if n.granted(func(g Grant) []string { return g.SchedulerQueues }, name) {
		return nil
	}
	return &Refusal{
		Field: field, What: "batch-scheduler queue " + name,
		Missing: n.policyHint("schedulerQueues"),
	}
}

// PodSecurityLevel is the Pod Security Standards level the namespace's
// SparkApplications' pods are held to: the highest its grants name
// (allowPrivileged is privileged), restricted when none does.
func (n Namespace) PodSecurityLevel() string {
	rank := map[string]int{LevelRestricted: 0, LevelBaseline: 1, LevelPrivileged: 2}
	level := LevelRestricted
	for _, g := range n.Grants {
		l := g.PodSecurityLevel
		if g.Privileged {
			l = LevelPrivileged
		}
		if r, ok := rank[l]; ok && r > rank[level] {
			level = l
		}
	}
	return level
}

// HostPathAllowed says whether a grant allows hostPath volumes; they are
// judged apart from the Pod Security level.
func (n Namespace) HostPathAllowed() bool {
	return slices.ContainsFunc(n.Grants, func(g Grant) bool { return g.HostPath })
}

// PodSecurity is the refusal of a pod that breaks the namespace's Pod
// Security level: field names the pod, what the check that failed and its
// detail (which names the pod's field).
func (n Namespace) PodSecurity(field, what string) *Refusal {
	level := n.PodSecurityLevel()
	return &Refusal{
		Field: field, What: what,
		Missing: fmt.Sprintf("the namespace's pods are held to the %q Pod Security level, and %s; set the field to the compliant value or leave it unset (laxity then sets it)",
			level, n.policyHint("podSecurityLevel")),
	}
}
