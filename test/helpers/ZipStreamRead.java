// Reads a zip front to back with java.util.zip.ZipInputStream, the streaming reader many Java
// systems use, and prints one line per entry: its name, the bytes read and their CRC-32. Exits 1
// with the reader's message when it refuses the zip. Run as `java ZipStreamRead.java <file.zip>`.
import java.io.BufferedInputStream;
import java.io.FileInputStream;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

public class ZipStreamRead {
  public static void main(String[] args) throws Exception {
    try (ZipInputStream zip = new ZipInputStream(new BufferedInputStream(new FileInputStream(args[0])), StandardCharsets.UTF_8)) {
      byte[] buffer = new byte[65536];
      ZipEntry entry;
      while ((entry = zip.getNextEntry()) != null) {
        CRC32 crc = new CRC32();
        long size = 0;
        int n;
        while ((n = zip.read(buffer)) > 0) {
          crc.update(buffer, 0, n);
          size += n;
        }
        System.out.println(entry.getName() + "\t" + size + "\t" + crc.getValue());
      }
    } catch (Exception e) {
      System.err.println(e);
      System.exit(1);
    }
  }
}
