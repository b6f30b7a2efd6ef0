package tenancy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reproduced is the template of issue 26's first defect: it sends the
// driver to another namespace and API server with another tenant's Secret,
// at system priorities, on another team's queue.
const reproduced = `{"type":"Scala","mode":"cluster","sparkVersion":"3.5.3","mainApplicationFile":"local:///opt/job.jar",
"sparkConf":{"spark.kubernetes.namespace":"team-b","spark.kubernetes.driver.secrets.bob-db-creds":"/mnt/bob","spark.kubernetes.driver.master":"https://evil:6443"},
"batchScheduler":"volcano","batchSchedulerOptions":{"queue":"team-b-queue"},
"volumes":[{"name":"nfs","nfs":{"server":"nfs.team-b","path":"/"}}],
"driver":{"priorityClassName":"system-cluster-critical","podSecurityContext":{"runAsUser":0,"seccompProfile":{"type":"Unconfined"}}},
"executor":{"priorityClassName":"system-node-critical"}}`

func TestTemplateAuthority(t *testing.T) {
	const field = "spec.sparkApplication"
	plain := Namespace{Name: "team-a", DefaultServiceAccounts: []string{"spark"}}
	for _, tc := range []struct {
		name     string
		template string
		grants   []Grant
		want     []string // the refused fields, in order
	}{
		{name: "the reproduced template", template: reproduced, want: []string{
			field + ".batchScheduler",
			field + ".batchSchedulerOptions.queue",
			field + ".driver.priorityClassName",
			field + ".executor.priorityClassName",
			field + `.sparkConf["spark.kubernetes.driver.master"]`,
			field + `.sparkConf["spark.kubernetes.namespace"]`,
		}},
		{name: "the reproduced template, its priorities, scheduler and queue granted", template: reproduced,
			grants: []Grant{{PriorityClasses: []string{"system-cluster-critical", "system-node-critical"}, Schedulers: []string{"volcano"}, SchedulerQueues: []string{"team-b-queue"}}},
			want:   []string{field + `.sparkConf["spark.kubernetes.driver.master"]`, field + `.sparkConf["spark.kubernetes.namespace"]`}},
		{name: "escapes are refused whatever is granted", template: `{"sparkConf":{"spark.master":"k8s://https://x","spark.kubernetes.authenticate.submission.oauthToken":"t","spark.kubernetes.file.upload.path":"s3a://b","spark.submit.deployMode":"client","spark.kerberos.keytab":"/k"}}`,
			grants: []Grant{{ServiceAccounts: []string{"*"}, HostPath: true, Privileged: true, PodSecurityLevel: LevelPrivileged, PriorityClasses: []string{"*"}, Schedulers: []string{"*"}, SchedulerQueues: []string{"*"}}},
			want: []string{
				field + `.sparkConf["spark.kerberos.keytab"]`,
				field + `.sparkConf["spark.kubernetes.authenticate.submission.oauthToken"]`,
				field + `.sparkConf["spark.kubernetes.file.upload.path"]`,
				field + `.sparkConf["spark.master"]`,
				field + `.sparkConf["spark.submit.deployMode"]`,
			}},
		{name: "case and space tricks", template: `{"sparkConf":{"Spark.Kubernetes.NAMESPACE":"team-b"," spark.kubernetes.namespace":"team-b","spark.kubernetes.namespace\u200b":"team-b","spark.kubernetes.namespace=x":"y"}}`,
			want: []string{
				field + `.sparkConf[" spark.kubernetes.namespace"]`,
				field + `.sparkConf["Spark.Kubernetes.NAMESPACE"]`,
				field + `.sparkConf["spark.kubernetes.namespace=x"]`,
				field + `.sparkConf["spark.kubernetes.namespace\u200b"]`,
			}},
		{name: "settings passed as JVM options", template: `{"driver":{"javaOptions":"-Xmx1g -Dspark.kubernetes.namespace=team-b","env":[{"name":"JAVA_TOOL_OPTIONS","value":"-Dspark.master=k8s://x"}]},"executor":{"envVars":{"SPARK_JAVA_OPT_1":"-Dspark.kubernetes.authenticate.executor.serviceAccountName=admin"}},"sparkConf":{"spark.driver.extraJavaOptions":"-Dspark.kubernetes.driver.master=https://x"}}`,
			want: []string{
				field + ".driver.javaOptions (-Dspark.kubernetes.namespace)",
				field + ".driver.env[0].value (-Dspark.master)",
				field + `.executor.envVars["SPARK_JAVA_OPT_1"] (-Dspark.kubernetes.authenticate.executor.serviceAccountName)`,
				field + `.sparkConf["spark.driver.extraJavaOptions"] (-Dspark.kubernetes.driver.master)`,
			}},
		{name: "spark-operator fields acted on by its own identity", template: `{"mode":"client","proxyUser":"hdfs","sparkConfigMap":"conf","mainApplicationFile":"/var/run/secrets/kubernetes.io/serviceaccount/token","deps":{"jars":["file:///etc/passwd","s3a://ok/x.jar","local:///opt/y.jar"]},"driver":{"kubernetesMaster":"https://x","template":{"metadata":{"namespace":"team-b"}}}}`,
			want: []string{
				field + ".mode", field + ".proxyUser", field + ".sparkConfigMap", field + ".mainApplicationFile", field + ".deps.jars[0]",
				field + ".driver.kubernetesMaster", field + ".driver.template.metadata.namespace",
			}},
		{name: "in-namespace things need no grant", template: `{"mode":"cluster","mainApplicationFile":"s3a://jobs/j.jar","hadoopConfigMap":"hadoop","driver":{"secrets":[{"name":"db","path":"/mnt","secretType":"Generic"}],"envFrom":[{"secretRef":{"name":"db"}}],"env":[{"name":"P","valueFrom":{"secretKeyRef":{"name":"db","key":"p"}}}],"template":{"metadata":{"namespace":"team-a"}},"labels":{"kueue.x-k8s.io/queue-name":"local"}},"sparkConf":{"spark.kubernetes.driver.secrets.db":"/mnt/db","spark.kubernetes.executor.secretKeyRef.P":"db:p","spark.sql.shuffle.partitions":"8","spark.kubernetes.driver.volumes.persistentVolumeClaim.d.options.claimName":"d"}}`},
		{name: "schedulers, queues and priorities in every place", template: `{"driver":{"schedulerName":"yunikorn","annotations":{"yunikorn.apache.org/queue":"root.b"},"template":{"metadata":{"labels":{"queue":"root.c"}},"spec":{"priorityClassName":"high","schedulerName":"volcano"}}},"executor":{"schedulerName":"default-scheduler"},"batchSchedulerOptions":{"priorityClassName":"high"},"sparkConf":{"spark.kubernetes.scheduler.name":"volcano","spark.kubernetes.executor.annotation.scheduling.volcano.sh/queue-name":"q","spark.kubernetes.scheduler.volcano.podGroupTemplateFile":"/pg.yaml"}}`,
			want: []string{
				field + ".batchSchedulerOptions.priorityClassName",
				field + ".driver.schedulerName",
				field + `.driver.annotations["yunikorn.apache.org/queue"]`,
				field + `.driver.template.metadata.labels["queue"]`,
				field + ".driver.template.spec.priorityClassName",
				field + ".driver.template.spec.schedulerName",
				field + `.sparkConf["spark.kubernetes.executor.annotation.scheduling.volcano.sh/queue-name"]`,
				field + `.sparkConf["spark.kubernetes.scheduler.name"]`,
				field + `.sparkConf["spark.kubernetes.scheduler.volcano.podGroupTemplateFile"]`,
			}},
		{name: "the same, granted", template: `{"driver":{"schedulerName":"yunikorn","annotations":{"yunikorn.apache.org/queue":"root.b"},"template":{"spec":{"priorityClassName":"high"}}},"sparkConf":{"spark.kubernetes.scheduler.name":"volcano","spark.kubernetes.scheduler.volcano.podGroupTemplateFile":"/pg.yaml"}}`,
			grants: []Grant{{PriorityClasses: []string{"high"}, Schedulers: []string{"yunikorn", "volcano"}}, {SchedulerQueues: []string{"*"}}}},
		{name: "laxity's own labels through sparkConf", template: `{"sparkConf":{"spark.kubernetes.driver.label.laxity.dev/query":"other","spark.kubernetes.executor.label.app.kubernetes.io/managed-by":"me","spark.kubernetes.driver.label.team":"a"}}`,
			want: []string{
				field + `.sparkConf["spark.kubernetes.driver.label.laxity.dev/query"]`,
				field + `.sparkConf["spark.kubernetes.executor.label.app.kubernetes.io/managed-by"]`,
			}},
		{name: "what spark-operator exposes with its own identity", template: `{"sparkUIOptions":{"serviceType":"LoadBalancer","ingressAnnotations":{"nginx.ingress.kubernetes.io/configuration-snippet":"x"}},"driverIngressOptions":[{"servicePort":80}]}`,
			want: []string{field + ".sparkUIOptions.ingressAnnotations", field + ".sparkUIOptions.serviceType", field + ".driverIngressOptions"}},
		{name: "a Spark UI inside the cluster", template: `{"sparkUIOptions":{"serviceType":"ClusterIP","servicePort":4040}}`},
		{name: "spark-submit's file lists", template: `{"sparkConf":{"spark.files":"s3a://b/x, /etc/shadow","spark.jars":"local:///opt/a.jar"}}`,
			want: []string{field + `.sparkConf["spark.files"] (entry 1)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := plain
			ns.Grants = tc.grants
			var got []string
			for _, r := range ns.Template(field, template(t, tc.template)) {
				got = append(got, r.Field)
				if !strings.Contains(r.Error(), "is not permitted") {
					t.Errorf("refusal %q does not say what is not permitted", r)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refused fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodSecurityLevel(t *testing.T) {
	for _, tc := range []struct {
		grants []Grant
		want   string
	}{
		{want: LevelRestricted},
		{grants: []Grant{{PodSecurityLevel: "bogus"}}, want: LevelRestricted},
		{grants: []Grant{{PodSecurityLevel: LevelBaseline}}, want: LevelBaseline},
		{grants: []Grant{{PodSecurityLevel: LevelBaseline}, {PodSecurityLevel: LevelRestricted}}, want: LevelBaseline},
		{grants: []Grant{{PodSecurityLevel: LevelBaseline}, {Privileged: true}}, want: LevelPrivileged},
		{grants: []Grant{{HostPath: true}}, want: LevelRestricted},
	} {
		if got := (Namespace{Name: "n", Grants: tc.grants}).PodSecurityLevel(); got != tc.want {
			t.Errorf("grants %+v: level %q, want %q", tc.grants, got, tc.want)
		}
	}
	if r := (Namespace{Name: "n", Grants: []Grant{{PodSecurityLevel: LevelPrivileged}}}).Privileged("f", "a privileged container"); r != nil {
		t.Errorf("the privileged level refused a privileged container: %v", r)
	}
	if r := (Namespace{Name: "n", Grants: []Grant{{PodSecurityLevel: LevelBaseline}}}).Privileged("f", "a privileged container"); r == nil {
		t.Error("the baseline level allowed a privileged container")
	}
	r := Namespace{Name: "team-a"}.PodSecurity("spec.sparkApplication.driver", "runAsUser=0")
	if !strings.Contains(r.Error(), `"restricted" Pod Security level`) || !strings.Contains(r.Error(), "spec.podSecurityLevel") {
		t.Errorf("refusal %q: want the level and the grant", r)
	}
}

func TestConfVolumeTypes(t *testing.T) {
	spec := template(t, `{"sparkConf":{"spark.kubernetes.driver.volumes.nfs.data.mount.path":"/d","spark.kubernetes.driver.volumes.nfs.data.options.server":"s","Spark.Kubernetes.Driver.Volumes.emptyDir.tmp.mount.path":"/t","spark.kubernetes.executor.volumes.hostPath.h.mount.path":"/h","spark.kubernetes.driver.volumes.x":"y"}}`)
	if diff := cmp.Diff(map[string]string{"data": "nfs", "tmp": "emptyDir"}, ConfVolumeTypes(spec, "driver")); diff != "" {
		t.Errorf("driver volumes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"h": "hostPath"}, ConfVolumeTypes(spec, "executor")); diff != "" {
		t.Errorf("executor volumes (-want +got):\n%s", diff)
	}
}

// FuzzTemplate feeds Template hostile templates: it never panics, every
// refusal names a field of the template, and a setting that is, but for
// case, spark.kubernetes.namespace is always refused.
func FuzzTemplate(f *testing.F) {
	f.Add(reproduced, "spark.kubernetes.namespace")
	f.Add(`{"driver":{"javaOptions":"-Dspark.master=x"}}`, "SPARK.MASTER")
	f.Add(`{"driver":{"template":{"spec":{"containers":[{"env":[{"value":"-Dspark.kubernetes.namespace=b"}]}]}}}}`, " spark.kubernetes.namespace ")
	f.Add(`{"sparkConf":{"a":1},"driver":[],"executor":{"labels":{"queue":3}}}`, "spark.kubernetes.driver.label.queue")
	ns := Namespace{Name: "team-a", Grants: []Grant{{PriorityClasses: []string{"p"}}}}
	f.Fuzz(func(t *testing.T, doc, key string) {
		var spec map[string]any
		if json.Unmarshal([]byte(doc), &spec) != nil {
			spec = map[string]any{}
		}
		conf, ok := spec["sparkConf"].(map[string]any)
		if !ok {
			conf = map[string]any{}
			spec["sparkConf"] = conf
		}
		conf[key] = "team-b"
		rs := ns.Template("spec.sparkApplication", spec)
		for _, r := range rs {
			if !strings.HasPrefix(r.Field, "spec.sparkApplication") || r.What == "" || r.Missing == "" {
				t.Fatalf("refusal %+v does not name a field of the template, what and why", r)
			}
		}
		if strings.EqualFold(key, "spark.kubernetes.namespace") || strings.TrimSpace(key) != key {
			found := false
			for _, r := range rs {
				found = found || strings.Contains(r.Field, fmt.Sprintf("[%q]", key))
			}
			if !found {
				t.Fatalf("setting %q was not refused: %v", key, rs)
			}
		}
		_ = ConfVolumeTypes(spec, "driver")
	})
}
