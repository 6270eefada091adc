package acidflow.spark;

/** Whether a row version (originalTransaction, V1 bucket property, rowId, currentTransaction) is hidden. */
interface RowHider {
  boolean hidden(long o, long b, long r, long current);
}
