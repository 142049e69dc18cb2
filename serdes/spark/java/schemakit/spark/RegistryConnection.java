package schemakit.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLSocketFactory;

/**
 * How an executor reaches the registry: the URLs (failover in order) and the authentication and TLS settings,
 * given with confluent-kafka's {@code SchemaRegistryClient} keys, the same ones the Python engine passes to
 * {@code RegistryClient.from_config}: {@code url}; {@code basic.auth.credentials.source} (USER_INFO, URL) and
 * {@code basic.auth.user.info}, or credentials in the URL; {@code bearer.auth.credentials.source} STATIC_TOKEN
 * ({@code bearer.auth.token}) or OAUTHBEARER ({@code bearer.auth.issuer.endpoint.url}, {@code bearer.auth.client.id},
 * {@code bearer.auth.client.secret}, {@code bearer.auth.scope}), with {@code bearer.auth.logical.cluster} and
 * {@code bearer.auth.identity.pool.id}; {@code ssl.ca.location}, {@code ssl.certificate.location},
 * {@code ssl.key.location}, {@code ssl.key.password} (PEM files, read on the executor); {@code timeout} (seconds).
 *
 * <p>Secrets stay in this object's fields: {@link #toString} shows the URLs without credentials, and error
 * messages name URLs and paths only. OAuth tokens are fetched by each executor JVM (client-credentials grant,
 * client id and secret as HTTP basic auth) and reused until 80% of their lifetime has passed; a 401 from the
 * registry fetches a new one once.
 */
final class RegistryConnection {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ConcurrentHashMap<String, Token> TOKENS = new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<String, SSLSocketFactory> TLS = new ConcurrentHashMap<>();
  private static final double REFRESH_RATIO = 0.8;

  private final List<String> urls = new ArrayList<>();
  private final Map<String, String> config;
  private final String basic;  // "Basic ..." header value, or null
  private final int timeoutMs;

  /** A failed registry call: {@code notFound} for a 404, {@code unreachable} when no URL answered usefully. */
  static final class LookupException extends Exception {
    private static final long serialVersionUID = 1L;
    final boolean notFound;
    final boolean unreachable;

    LookupException(String message, boolean notFound, boolean unreachable) {
      super(message);
      this.notFound = notFound;
      this.unreachable = unreachable;
    }
  }

  private static final class Token {
    final String value;
    final long refreshAtNanos;

    Token(String value, long refreshAtNanos) {
      this.value = value;
      this.refreshAtNanos = refreshAtNanos;
    }
  }

  RegistryConnection(JsonNode options) {
    Map<String, String> conf = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = options.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      conf.put(e.getKey(), e.getValue().isTextual() ? e.getValue().asText() : e.getValue().toString());
    }
    String userInfo = null;
    for (String raw : conf.getOrDefault("url", "").split(",")) {
      String url = raw.trim();
      if (url.isEmpty()) {
        continue;
      }
      try {
        URI uri = URI.create(url.endsWith("/") ? url.substring(0, url.length() - 1) : url);
        if (uri.getRawUserInfo() != null && userInfo == null) {
          userInfo = URLDecoder.decode(uri.getRawUserInfo(), StandardCharsets.UTF_8);
        }
        urls.add(new URI(uri.getScheme(), null, uri.getHost(), uri.getPort(), uri.getPath(), null, null).toString());
      } catch (IllegalArgumentException | URISyntaxException e) {
        throw new IllegalArgumentException("registry URL is not valid (" + e.getClass().getSimpleName() + ")");
      }
    }
    if (urls.isEmpty()) {
      throw new IllegalArgumentException("registry options need a url");
    }
    String source = conf.get("basic.auth.credentials.source");
    if (conf.containsKey("basic.auth.user.info") && !"URL".equals(source)) {
      userInfo = conf.get("basic.auth.user.info");
    }
    basic = userInfo == null ? null
        : "Basic " + Base64.getEncoder().encodeToString(userInfo.getBytes(StandardCharsets.UTF_8));
    String timeout = conf.get("timeout");
    timeoutMs = timeout == null ? 10_000 : (int) Math.round(Double.parseDouble(timeout) * 1000);
    this.config = conf;
  }

  /** The cache key of a registry cluster (its URLs): schema ids are global within it. */
  String cluster() {
    return String.join(",", urls);
  }

  @Override
  public String toString() {
    return "registry " + cluster();
  }

  /** GET {@code path} as JSON from the first URL that answers. */
  JsonNode get(String path, String notFoundMessage) throws LookupException {
    StringBuilder failures = new StringBuilder();
    for (String url : urls) {
      try {
        Answer answer = request(url + path, false);
        if (answer.status == 401 && isOAuth()) {
          answer = request(url + path, true);  // the token may have been revoked early: fetch a new one once
        }
        if (answer.status == 200) {
          return JSON.readTree(answer.body);
        }
        String error = errorMessage(answer.body);
        if (answer.status == 404) {
          throw new LookupException(notFoundMessage + " (" + error + ")", true, false);
        }
        if (answer.status < 500 && answer.status != 408 && answer.status != 429) {
          throw new LookupException("registry answered HTTP " + answer.status + " for " + path + ": " + error, false,
              false);
        }
        failures.append(url).append(": HTTP ").append(answer.status).append(' ').append(error).append("; ");
      } catch (IOException | IllegalArgumentException e) {
        failures.append(url).append(": ").append(e).append("; ");
      }
    }
    throw new LookupException("could not fetch " + path + " from the registry (" + failures + ")", false, true);
  }

  private static final class Answer {
    final int status;
    final byte[] body;

    Answer(int status, byte[] body) {
      this.status = status;
      this.body = body;
    }
  }

  private Answer request(String url, boolean freshToken) throws IOException, LookupException {
    HttpURLConnection conn = open(url);
    conn.setRequestProperty("Accept", "application/vnd.schemaregistry.v1+json, application/json");
    String authorization = authorization(freshToken);
    if (authorization != null) {
      conn.setRequestProperty("Authorization", authorization);
    }
    String cluster = config.get("bearer.auth.logical.cluster");
    if (cluster != null && isBearer()) {
      conn.setRequestProperty("target-sr-cluster", cluster);
    }
    String pool = config.get("bearer.auth.identity.pool.id");
    if (pool != null && isBearer()) {
      conn.setRequestProperty("Confluent-Identity-Pool-Id", pool);
    }
    int status = conn.getResponseCode();
    InputStream in = status < 400 ? conn.getInputStream() : conn.getErrorStream();
    return new Answer(status, readAll(in));
  }

  private HttpURLConnection open(String url) throws IOException {
    HttpURLConnection conn = (HttpURLConnection) URI.create(url).toURL().openConnection();
    conn.setConnectTimeout(timeoutMs);
    conn.setReadTimeout(timeoutMs);
    // an executor asks once per schema id: no idle connections left open to the registry (or the token endpoint)
    conn.setRequestProperty("Connection", "close");
    if (conn instanceof HttpsURLConnection) {
      SSLSocketFactory factory = socketFactory();
      if (factory != null) {
        ((HttpsURLConnection) conn).setSSLSocketFactory(factory);
      }
    }
    return conn;
  }

  private SSLSocketFactory socketFactory() throws IOException {
    String ca = config.get("ssl.ca.location");
    String cert = config.get("ssl.certificate.location");
    if (ca == null && cert == null) {
      return null;
    }
    String key = ca + "|" + cert + "|" + config.get("ssl.key.location");
    SSLSocketFactory factory = TLS.get(key);
    if (factory == null) {
      factory = PemTls.socketFactory(ca, cert, config.get("ssl.key.location"), config.get("ssl.key.password"));
      TLS.put(key, factory);
    }
    return factory;
  }

  private boolean isBearer() {
    return config.containsKey("bearer.auth.credentials.source");
  }

  private boolean isOAuth() {
    return "OAUTHBEARER".equals(config.get("bearer.auth.credentials.source"));
  }

  private String authorization(boolean freshToken) throws IOException, LookupException {
    String source = config.get("bearer.auth.credentials.source");
    if (source == null) {
      return basic;
    }
    switch (source) {
      case "STATIC_TOKEN":
        return "Bearer " + required("bearer.auth.token");
      case "OAUTHBEARER":
        return "Bearer " + oauthToken(freshToken);
      default:
        throw new LookupException("bearer.auth.credentials.source " + source + " is not supported by the JVM engine "
            + "(use STATIC_TOKEN or OAUTHBEARER, or engine='python')", false, false);
    }
  }

  private String required(String key) throws LookupException {
    String value = config.get(key);
    if (value == null || value.isEmpty()) {
      throw new LookupException("registry options: bearer.auth.credentials.source "
          + config.get("bearer.auth.credentials.source") + " needs " + key, false, false);
    }
    return value;
  }

  private String oauthToken(boolean fresh) throws IOException, LookupException {
    String endpoint = required("bearer.auth.issuer.endpoint.url");
    String clientId = required("bearer.auth.client.id");
    String secret = required("bearer.auth.client.secret");
    String scope = config.get("bearer.auth.scope");
    String cacheKey = endpoint + "|" + clientId + "|" + scope;
    synchronized (TOKENS) {
      Token token = TOKENS.get(cacheKey);
      if (!fresh && token != null && System.nanoTime() < token.refreshAtNanos) {
        return token.value;
      }
      String form = "grant_type=client_credentials"
          + (scope == null ? "" : "&scope=" + URLEncoder.encode(scope, StandardCharsets.UTF_8));
      HttpURLConnection conn = open(endpoint);
      conn.setRequestMethod("POST");
      conn.setDoOutput(true);
      conn.setRequestProperty("Content-Type", "application/x-www-form-urlencoded");
      conn.setRequestProperty("Accept", "application/json");
      String credentials = URLEncoder.encode(clientId, StandardCharsets.UTF_8) + ":"
          + URLEncoder.encode(secret, StandardCharsets.UTF_8);
      conn.setRequestProperty("Authorization", "Basic "
          + Base64.getEncoder().encodeToString(credentials.getBytes(StandardCharsets.UTF_8)));
      try (OutputStream out = conn.getOutputStream()) {
        out.write(form.getBytes(StandardCharsets.UTF_8));
      }
      int status = conn.getResponseCode();
      byte[] body = readAll(status < 400 ? conn.getInputStream() : conn.getErrorStream());
      JsonNode answer;
      try {
        answer = JSON.readTree(body);
      } catch (IOException e) {
        answer = JSON.createObjectNode();
      }
      String value = answer.path("access_token").asText("");
      if (status != 200 || value.isEmpty()) {
        String detail = answer.path("error_description").asText(answer.path("error").asText(""));
        throw new LookupException("OAuth token endpoint " + endpoint + " gave no token for client " + clientId
            + ": HTTP " + status + (detail.isEmpty() ? "" : ": " + detail), false, status >= 500);
      }
      double lifetime = answer.path("expires_in").asDouble(Double.POSITIVE_INFINITY);
      long refreshAt = Double.isInfinite(lifetime) ? Long.MAX_VALUE
          : System.nanoTime() + (long) (lifetime * REFRESH_RATIO * 1e9);
      TOKENS.put(cacheKey, new Token(value, refreshAt));
      return value;
    }
  }

  private static byte[] readAll(InputStream in) throws IOException {
    if (in == null) {
      return new byte[0];
    }
    try (in) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      in.transferTo(out);
      return out.toByteArray();
    }
  }

  /** The error body's Confluent {@code message}, or the raw body when it is not the usual JSON envelope. */
  private static String errorMessage(byte[] body) {
    String text = new String(body, StandardCharsets.UTF_8);
    try {
      JsonNode message = JSON.readTree(text).path("message");
      return message.isTextual() ? message.asText() : text;
    } catch (IOException e) {
      return text;
    }
  }
}
