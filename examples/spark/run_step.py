"""spark-submit's entry point for laxity's reference job (the
SparkApplication's mainApplicationFile): one batch, partial merge or final
merge of the query the job options name."""

import sys

from laxity_step.job import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
