package tenancy

import (
	"fmt"
	"sort"
	"strings"
)

// The sparkConf keys through which Spark on Kubernetes picks service
// accounts, mounts host paths and reads pod templates: the template's
// fields are not the only way to ask for them.
const (
	confDriverServiceAccount   = "spark.kubernetes.authenticate.driver.serviceAccountName"
	confExecutorServiceAccount = "spark.kubernetes.authenticate.executor.serviceAccountName"
	confDriverHostPath         = "spark.kubernetes.driver.volumes.hostPath."
	confExecutorHostPath       = "spark.kubernetes.executor.volumes.hostPath."
	confDriverPodTemplate      = "spark.kubernetes.driver.podTemplateFile"
	confExecutorPodTemplate    = "spark.kubernetes.executor.podTemplateFile"
)

// Template decides whether the namespace's SparkApplications may be made
// from spec, a query's SparkApplication template (the spec of a
// SparkApplication as decoded from JSON), whose path is field
// (spec.sparkApplication). It returns every refusal, in a fixed order:
//
//   - the service accounts the driver and executors run as
//     (driver.serviceAccount, executor.serviceAccount, a pod template's
//     serviceAccountName and the sparkConf keys that name one) must be
//     allowed (Namespace.ServiceAccount);
//   - hostPath volumes (volumes, a pod template's volumes, sparkConf
//     spark.kubernetes.*.volumes.hostPath.*) need allowHostPath;
//   - privileged containers, added capabilities, the host's network, PID
//     or IPC namespace, and pod template files laxity cannot read
//     (sparkConf spark.kubernetes.*.podTemplateFile) need allowPrivileged.
//
// Fields of the wrong type are left to the template's own validation.
func (n Namespace) Template(field string, spec map[string]any) []*Refusal {
	c := &templateCheck{n: n}
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
		c.container(at, pod)
		for _, list := range []string{"sidecars", "initContainers"} {
			items, _ := pod[list].([]any)
			for i, item := range items {
				if container, ok := item.(map[string]any); ok {
					c.container(fmt.Sprintf("%s.%s[%d]", at, list, i), container)
				}
			}
		}
		if tmpl, ok := pod["template"].(map[string]any); ok {
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
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		items, _ := spec[list].([]any)
		for i, item := range items {
			if container, ok := item.(map[string]any); ok {
				c.container(fmt.Sprintf("%s.%s[%d]", at, list, i), container)
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

// sparkConf checks the Spark settings that pick service accounts, mount
// host paths or read pod templates, in key order.
func (c *templateCheck) sparkConf(at string, conf map[string]any) {
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field := fmt.Sprintf("%s[%q]", at, k)
		value, _ := conf[k].(string)
		switch {
		case k == confDriverServiceAccount || k == confExecutorServiceAccount:
			c.add(c.n.ServiceAccount(field, value))
		case strings.HasPrefix(k, confDriverHostPath) || strings.HasPrefix(k, confExecutorHostPath):
			c.add(c.n.HostPath(field))
		case k == confDriverPodTemplate || k == confExecutorPodTemplate:
			c.add(c.n.Privileged(field, "a pod template file laxity cannot inspect"))
		}
	}
}
