"""laxity's reference Spark job: one batch, partial merge or final merge of
an aggregate query, as laxity's operator launches it.

The modules split by what they need:

- params, slices, sqltext, decompose and publish are plain Python (3.8 or
  later, no third-party package): the step's parameters, its exact input,
  the query's decomposition into partial, merge and final SQL, and the
  idempotent write of a result. The tests run them without Spark.
- job imports pyspark, and only inside its functions, so that importing the
  package never needs Spark.
"""
