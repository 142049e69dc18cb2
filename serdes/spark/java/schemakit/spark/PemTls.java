package schemakit.spark;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.crypto.Cipher;
import javax.crypto.EncryptedPrivateKeyInfo;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * TLS from the PEM files confluent-kafka's {@code ssl.*} keys name (as Python's {@code ssl} module reads them):
 * a CA bundle (file, or directory of PEM files) to trust instead of the JVM's defaults, and a client
 * certificate chain with its private key for mutual TLS. Keys may be PKCS#8 (plain or encrypted with
 * {@code ssl.key.password}), PKCS#1 RSA or SEC1 EC; the key may also sit in the certificate file.
 */
final class PemTls {
  private static final Pattern BLOCK = Pattern.compile(
      "-----BEGIN ([A-Z0-9 ]+)-----([\\s\\S]*?)-----END \\1-----");

  private PemTls() {}

  static SSLSocketFactory socketFactory(String ca, String cert, String key, String password) throws IOException {
    try {
      TrustManagerFactory trust = null;
      if (ca != null) {
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        int n = 0;
        for (Certificate c : caCertificates(new File(ca))) {
          store.setCertificateEntry("ca-" + n++, c);
        }
        trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(store);
      }
      KeyManagerFactory keys = null;
      if (cert != null) {
        String certText = read(new File(cert));
        List<Certificate> chain = certificates(certText);
        if (chain.isEmpty()) {
          throw new IOException("ssl.certificate.location " + cert + " holds no PEM certificate");
        }
        PrivateKey privateKey = privateKey(key != null ? read(new File(key)) : certText, password,
            key != null ? key : cert);
        char[] pass = new char[0];
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setKeyEntry("client", privateKey, pass, chain.toArray(new Certificate[0]));
        keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(store, pass);
      }
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keys == null ? null : keys.getKeyManagers(), trust == null ? null : trust.getTrustManagers(), null);
      return context.getSocketFactory();
    } catch (GeneralSecurityException e) {
      throw new IOException("cannot set up TLS from the ssl.* options: " + e, e);
    }
  }

  private static String read(File file) throws IOException {
    return new String(Files.readAllBytes(file.toPath()), StandardCharsets.US_ASCII);
  }

  private static List<Certificate> caCertificates(File ca) throws IOException, GeneralSecurityException {
    List<Certificate> out = new ArrayList<>();
    File[] files = ca.isDirectory() ? ca.listFiles() : new File[] {ca};
    if (files != null) {
      for (File f : files) {
        if (f.isFile()) {
          out.addAll(certificates(read(f)));
        }
      }
    }
    if (out.isEmpty()) {
      throw new IOException("ssl.ca.location " + ca + " holds no PEM certificate");
    }
    return out;
  }

  private static List<Certificate> certificates(String pem) throws GeneralSecurityException {
    CertificateFactory factory = CertificateFactory.getInstance("X.509");
    List<Certificate> out = new ArrayList<>();
    Matcher m = BLOCK.matcher(pem);
    while (m.find()) {
      if (m.group(1).equals("CERTIFICATE")) {
        out.add(factory.generateCertificate(new ByteArrayInputStream(der(m.group(2)))));
      }
    }
    return out;
  }

  private static byte[] der(String body) {
    return Base64.getMimeDecoder().decode(body.trim());
  }

  private static PrivateKey privateKey(String pem, String password, String where)
      throws IOException, GeneralSecurityException {
    Matcher m = BLOCK.matcher(pem);
    while (m.find()) {
      String kind = m.group(1);
      if (m.group(2).contains("Proc-Type:")) {
        throw new IOException("the private key in " + where + " is encrypted the legacy OpenSSL way; convert it "
            + "with `openssl pkcs8 -topk8 -in <key> -out <key.pk8>`");
      }
      byte[] der = der(m.group(2));
      switch (kind) {
        case "PRIVATE KEY":
          return pkcs8(der);
        case "ENCRYPTED PRIVATE KEY": {
          if (password == null) {
            throw new IOException("the private key in " + where + " is encrypted: set ssl.key.password");
          }
          return pkcs8(decrypt(der, password));
        }
        case "RSA PRIVATE KEY":
          return pkcs8(wrap(der, RSA_ALGORITHM));
        case "EC PRIVATE KEY":
          return pkcs8(wrap(der, ecAlgorithm(der)));
        default:
          break;
      }
    }
    throw new IOException("no PEM private key found in " + where);
  }

  private static byte[] decrypt(byte[] der, String password) throws IOException, GeneralSecurityException {
    EncryptedPrivateKeyInfo info = new EncryptedPrivateKeyInfo(der);
    // For PBES2 the JDK names the real scheme (e.g. PBEWithHmacSHA256AndAES_256) only in the parameters
    String algorithm = info.getAlgParameters() != null ? info.getAlgParameters().toString() : info.getAlgName();
    SecretKeyFactory factory = SecretKeyFactory.getInstance(algorithm);
    Cipher cipher = Cipher.getInstance(algorithm);
    cipher.init(Cipher.DECRYPT_MODE, factory.generateSecret(new PBEKeySpec(password.toCharArray())),
        info.getAlgParameters());
    return info.getKeySpec(cipher).getEncoded();
  }

  private static PrivateKey pkcs8(byte[] der) throws GeneralSecurityException {
    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
    GeneralSecurityException last = null;
    for (String algorithm : new String[] {"RSA", "EC", "EdDSA", "DSA"}) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(spec);
      } catch (GeneralSecurityException e) {
        last = e;
      }
    }
    throw last;
  }

  // -- PKCS#1 / SEC1 keys wrapped as PKCS#8 (a few DER bytes; the JDK reads only PKCS#8) ----------------------

  /** AlgorithmIdentifier rsaEncryption with NULL parameters. */
  private static final byte[] RSA_ALGORITHM = {0x30, 0x0d, 0x06, 0x09, 0x2a, (byte) 0x86, 0x48, (byte) 0x86,
      (byte) 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00};
  /** The OID id-ecPublicKey (1.2.840.10045.2.1), DER-encoded. */
  private static final byte[] EC_PUBLIC_KEY = {0x06, 0x07, 0x2a, (byte) 0x86, 0x48, (byte) 0xce, 0x3d, 0x02, 0x01};

  /** AlgorithmIdentifier id-ecPublicKey with the curve OID found in the SEC1 key's [0] parameters. */
  private static byte[] ecAlgorithm(byte[] sec1) throws IOException {
    int[] seq = header(sec1, 0);  // ECPrivateKey ::= SEQUENCE { version, privateKey, [0] curve, [1] publicKey }
    int pos = seq[0];
    int end = seq[0] + seq[1];
    while (pos < end) {
      int tag = sec1[pos] & 0xff;
      int[] h = header(sec1, pos);
      if (tag == 0xa0) {
        ByteArrayOutputStream oids = new ByteArrayOutputStream();
        oids.write(EC_PUBLIC_KEY);
        oids.write(sec1, h[0], h[1]);
        return tlv(0x30, oids.toByteArray());
      }
      pos = h[0] + h[1];
    }
    throw new IOException("EC private key without curve parameters: convert it to PKCS#8 "
        + "(`openssl pkcs8 -topk8 -nocrypt`)");
  }

  private static byte[] wrap(byte[] key, byte[] algorithm) throws IOException {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(new byte[] {0x02, 0x01, 0x00});  // version 0
    body.write(algorithm);
    body.write(tlv(0x04, key));
    return tlv(0x30, body.toByteArray());
  }

  /** {offset of the contents, length of the contents} of the DER element at {@code pos}. */
  private static int[] header(byte[] der, int pos) throws IOException {
    if (pos + 2 > der.length) {
      throw new IOException("truncated DER in private key");
    }
    int len = der[pos + 1] & 0xff;
    int at = pos + 2;
    if (len >= 0x80) {
      int bytes = len & 0x7f;
      len = 0;
      for (int i = 0; i < bytes; i++) {
        len = (len << 8) | (der[at++] & 0xff);
      }
    }
    return new int[] {at, len};
  }

  private static byte[] tlv(int tag, byte[] contents) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(tag);
    int n = contents.length;
    if (n < 0x80) {
      out.write(n);
    } else if (n < 0x100) {
      out.write(0x81);
      out.write(n);
    } else if (n < 0x10000) {
      out.write(0x82);
      out.write(n >> 8);
      out.write(n);
    } else {
      out.write(0x83);
      out.write(n >> 16);
      out.write(n >> 8);
      out.write(n);
    }
    out.write(contents, 0, n);
    return out.toByteArray();
  }
}
