package partition

import "path/filepath"

// StoredClusterID returns the cluster.id that the meta.properties of every
// one of dirs records, and false when one of them has no such file or id,
// or they differ. A broker whose log dirs all name the same cluster is
// restarting, and can load its logs before the metadata confirms the id.
func StoredClusterID(fs FS, dirs []string) (string, bool) {
	id := ""
	for _, dir := range dirs {
		data, ok, err := readWholeFile(fs, filepath.Join(dir, metaPropertiesFile))
		if err != nil || !ok {
			return "", false
		}
		v := parseProperties(data)["cluster.id"]
		if v == "" || (id != "" && v != id) {
			return "", false
		}
		id = v
	}
	return id, id != ""
}
