package acidflow.spark;

/**
 * An error acidflow explains in one line (bad option, unknown table or lease, planner missing).
 *
 * <p>An IllegalArgumentException, so PySpark shows it as its own {@code IllegalArgumentException}
 * with just this line instead of a Py4JJavaError with the JVM's stack.
 */
public final class HiveAcidException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public HiveAcidException(String message) {
    super(message);
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this; // the message says everything; no Java stack for the user to read
  }
}
