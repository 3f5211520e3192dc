// Starts JMeter 2.13 after lifting XStream's type whitelist on JMeter's own XStream instances.
// Debian's xstream (>= 1.4.18) denies every type not explicitly permitted, and JMeter 2.13
// permits none, so its non-GUI driver cannot load any .jmx file. Nothing else is changed.
import java.lang.reflect.Field;
import com.thoughtworks.xstream.XStream;
import com.thoughtworks.xstream.security.AnyTypePermission;

public class PermitXStream {
    public static void main(String[] args) throws Exception {
        // SaveService reads saveservice.properties when loaded, so JMeter's properties come first.
        org.apache.jmeter.util.JMeterUtils.setJMeterHome(System.getProperty("jmeter.home"));
        org.apache.jmeter.util.JMeterUtils.loadJMeterProperties(
            System.getProperty("jmeter.home") + "/bin/jmeter.properties");
        Class<?> saveService = Class.forName("org.apache.jmeter.save.SaveService");
        for (String name : new String[] {"JMXSAVER", "JTLSAVER"}) {
            Field field = saveService.getDeclaredField(name);
            field.setAccessible(true);
            ((XStream) field.get(null)).addPermission(AnyTypePermission.ANY);
        }
        new org.apache.jmeter.JMeter().start(args);
    }
}
