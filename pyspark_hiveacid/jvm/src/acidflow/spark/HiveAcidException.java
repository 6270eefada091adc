package acidflow.spark;

/** An error acidflow explains in one line (bad option, unknown table, planner missing). */
public final class HiveAcidException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public HiveAcidException(String message) {
    super(message);
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this; // the message says everything; no Java stack for the user to read
  }
}
