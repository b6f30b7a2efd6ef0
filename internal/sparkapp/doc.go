// Package sparkapp turns laxity's steps (a query's batches, partial merges
// and final merge) into Kubeflow spark-operator SparkApplications
// (sparkoperator.k8s.io/v1beta2), and reads their state back. It is pure:
// no client, no clock. The spark-operator Go module is not a dependency, so
// objects are unstructured.
//
// # What a rendered SparkApplication says
//
// Render follows the step contract of docs/design.md ("The SparkApplication
// a step becomes"):
//
//   - name: <query>-b<index>, <query>-partial-<k> or <query>-final, plus
//     -r<attempt> for a retry (see Name for the length limit);
//   - labels laxity.dev/schedule, laxity.dev/query, laxity.dev/step;
//   - annotations laxity.dev/batch-index (the batch index, or the merge
//     ordinal), laxity.dev/from-tuple and laxity.dev/to-tuple (batches),
//     laxity.dev/inputs (merges), laxity.dev/nodes, laxity.dev/attempt and
//     laxity.dev/result (where the step writes its result);
//   - spec: the IntermittentQuery's spec.sparkApplication template with
//     executor.instances = ready nodes × executorsPerNode, the executors
//     pinned to the pool, and the step's parameters appended to arguments
//     and added to sparkConf (see Render).
//
// Render sets no owner reference: the controller adds one with
// controllerutil.SetControllerReference before creating the object.
//
// # Decisions
//
// Names are DNS-1035 labels of at most 63 characters, because
// spark-operator's admission webhook rejects any other SparkApplication name
// (it derives Service names from it) and it copies the name into the
// sparkoperator.k8s.io/app-name label of the driver and executor pods, whose
// values are limited to 63 characters. A query whose name does not fit is an
// error, never truncated: truncation would break the one-object-per-step
// guarantee that deterministic names give.
//
// Only the executors are pinned to the pool's nodeSelector. The pool is
// sized in executors (ready nodes × executorsPerNode), like the worker nodes
// of an EMR cluster with its primary node outside them: a driver pinned to
// the pool would take the room of one executor. A template that wants its
// driver on the pool sets driver.nodeSelector itself. On a key that both the
// template's executor.nodeSelector and the pool's nodeSelector set, the pool
// wins, since the ready nodes laxity counts and sizes the executors to are
// the nodes matching the pool's selector; the template's other keys are kept.
//
// Observe maps the spark-operator state machine onto laxity's four step
// outcomes; see Observe for the table.
package sparkapp
