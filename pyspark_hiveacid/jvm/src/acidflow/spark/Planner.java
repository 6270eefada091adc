package acidflow.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;

/**
 * The driver's link to acidflow's planning in Python: one long-lived {@code python -m
 * pyspark_hiveacid.planner} per driver JVM, JSON lines on its stdin and stdout (metastore,
 * snapshot lease, listing all stay in acid_core; this side never decides an ACID rule).
 *
 * <p>The interpreter: {@code spark.acidflow.python}, else {@code spark.pyspark.driver.python},
 * {@code spark.pyspark.python}, $PYSPARK_DRIVER_PYTHON, $PYSPARK_PYTHON, else {@code python3}. A
 * dead process is started again on the next request. The process exits when this JVM does (its
 * stdin closes).
 */
final class Planner {
  static final ObjectMapper JSON = new ObjectMapper();
  private static Planner instance;

  private final String python;
  private Process process;
  private BufferedWriter requests;
  private BufferedReader responses;
  private long nextId = 1;

  private Planner(String python) {
    this.python = python;
  }

  static synchronized Planner get() {
    if (instance == null) {
      instance = new Planner(interpreter());
    }
    return instance;
  }

  private static String interpreter() {
    SparkConf conf = SparkSession.active().sparkContext().getConf();
    for (String key :
        new String[] {"spark.acidflow.python", "spark.pyspark.driver.python", "spark.pyspark.python"}) {
      if (conf.contains(key) && !conf.get(key).isBlank()) {
        return conf.get(key);
      }
    }
    Map<String, String> env = System.getenv();
    for (String key : new String[] {"PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON"}) {
      String value = env.get(key);
      if (value != null && !value.isBlank()) {
        return value;
      }
    }
    return "python3";
  }

  private void start() throws IOException {
    ProcessBuilder builder = new ProcessBuilder(python, "-m", "pyspark_hiveacid.planner");
    builder.redirectError(ProcessBuilder.Redirect.INHERIT);
    try {
      process = builder.start();
    } catch (IOException e) {
      throw new HiveAcidException(
          "hiveacid: cannot start the planner '"
              + python
              + " -m pyspark_hiveacid.planner' ("
              + e.getMessage()
              + "); expected a Python with acidflow installed: set spark.acidflow.python");
    }
    requests =
        new BufferedWriter(new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8));
    responses =
        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
  }

  /** Send one request (its "id" is set here) and return the response's fields; errors throw. */
  synchronized JsonNode call(ObjectNode request) {
    try {
      for (int attempt = 0; ; attempt++) {
        if (process == null || !process.isAlive()) {
          start();
        }
        long id = nextId++;
        request.put("id", id);
        String line;
        try {
          requests.write(JSON.writeValueAsString(request));
          requests.write('\n');
          requests.flush();
          line = responses.readLine();
        } catch (IOException e) {
          line = null;
        }
        if (line == null) {
          process.destroy();
          process = null;
          if (attempt == 0) {
            continue; // started again once: a planner that died between two reads
          }
          throw new HiveAcidException(
              "hiveacid: the planner '" + python + " -m pyspark_hiveacid.planner' exited; see its "
                  + "stderr above; expected a Python with acidflow installed: set spark.acidflow.python");
        }
        JsonNode response = JSON.readTree(line);
        if (!response.path("ok").asBoolean(false)) {
          throw new HiveAcidException(response.path("error").asText("hiveacid: planning failed"));
        }
        return response;
      }
    } catch (IOException e) {
      throw new HiveAcidException("hiveacid: planner protocol error: " + e.getMessage());
    }
  }

  static ObjectNode request(String op, Map<String, String> options) {
    ObjectNode node = JSON.createObjectNode();
    node.put("op", op);
    ObjectNode opts = node.putObject("options");
    for (Map.Entry<String, String> e : options.entrySet()) {
      opts.put(e.getKey(), e.getValue());
    }
    return node;
  }
}
