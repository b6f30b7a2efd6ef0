package sparkapp

import (
	"github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/test/builder"
)

// minimalTemplate is a small but complete SparkApplication spec with a
// little of everything Render touches: arguments, sparkConf (with a stale
// spark.laxity.* key), an executor.instances it replaces, an executor
// nodeSelector that conflicts with the pool's on one key, a driver label
// of its own and an executor label that conflicts with laxity's.
const minimalTemplate = `{
  "type": "Scala",
  "mode": "cluster",
  "sparkVersion": "3.5.3",
  "mainClass": "dev.laxity.examples.Count",
  "mainApplicationFile": "local:///opt/spark/jars/count.jar",
  "arguments": ["--table", "orders"],
  "sparkConf": {"spark.ui.enabled": "false", "spark.laxity.stale": "x"},
  "driver": {"cores": 1, "memory": "1g", "labels": {"team": "sales"}},
  "executor": {"cores": 2, "memory": "4g", "instances": 99,
               "nodeSelector": {"zone": "a", "laxity.dev/pool": "other"},
               "labels": {"laxity.dev/query": "not-q1"}}
}`

// query is an IntermittentQuery analytics/q1 of schedule tpch with the given
// template (nil for none).
func query(template string) *v1alpha1.IntermittentQuery {
	return builder.Query("analytics", "q1").Bare().Schedule("tpch").Template(template).Obj()
}

// schedule is the ElasticSchedule analytics/tpch: sizes 2, 4 and 10, two
// executors per node, pool nodes labelled laxity.dev/pool=tpch.
func schedule() *v1alpha1.ElasticSchedule {
	return builder.Schedule("analytics", "tpch").Bare().
		Sizes(2, 4, 10).ExecutorsPerNode(2).NodeSelector(map[string]string{"laxity.dev/pool": "tpch"}).Obj()
}

var locations = Locations{Input: "s3a://stream/orders/", ResultRoot: "s3a://results/laxity/"}

func batch(index int, from, to int64) Step {
	return Step{Kind: planner.StepBatch, Index: index, FromTuple: from, ToTuple: to, Nodes: 4, ReadyNodes: 5}
}

func partial(index int, inputs ...string) Step {
	return Step{Kind: planner.StepPartial, Index: index, Inputs: len(inputs), InputLocations: inputs, Nodes: 2, ReadyNodes: 2}
}

func final(index int, inputs ...string) Step {
	return Step{Kind: planner.StepFinal, Index: index, Inputs: len(inputs), InputLocations: inputs, Nodes: 10, ReadyNodes: 10}
}

func retry(s Step, attempt int) Step {
	s.Attempt = attempt
	return s
}
