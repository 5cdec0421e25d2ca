<#
.SYNOPSIS
    Joins this Windows Server 2022 host to a kinit Kubernetes cluster as a worker.

.DESCRIPTION
    kinit's own take on the start.ps1 of the Windows flannel guides (Microsoft/SDN, seed 003),
    using the current pieces: containerd, the Kubernetes Windows binaries from dl.k8s.io,
    flanneld, the flannel CNI plugin delegating to sdnbridge (host-gw) or sdnoverlay (vxlan),
    and `kubeadm join`. kubelet, flanneld and kube-proxy run as Windows services (nssm).

    kinit has already, before this script runs:
      - installed the Containers feature and rebooted;
      - written C:\etc\kube-flannel\net-conf.json and C:\etc\cni\net.d\10-flannel.conf from
        the same variables as the Linux side;
      - written the kubeadm JoinConfiguration (-JoinConfig) when the node has not joined, and
        kubeconfigs for the kube-proxy and flannel service accounts.

    Idempotent: every step checks before it changes anything. The last line of output is
    KINIT_CHANGED=True or KINIT_CHANGED=False.
#>
[CmdletBinding()]
param(
    [Parameter(Mandatory = $true)][string]$ManagementIP,
    [string]$ClusterCIDR = "10.244.0.0/16",
    [string]$ServiceCIDR = "10.96.0.0/12",
    [string]$KubeDnsServiceIP = "10.96.0.10",
    [ValidateSet("l2bridge", "overlay")][string]$NetworkMode = "l2bridge",
    [Parameter(Mandatory = $true)][string]$KubernetesVersion,
    [string]$NodeName = ([System.Net.Dns]::GetHostEntry("").HostName.ToLower()),
    [string]$ContainerdVersion = "2.1.4",
    [string]$FlannelVersion = "v0.27.4",
    [string]$FlannelCniVersion = "v1.7.1-flannel2",
    [string]$WindowsCniVersion = "v0.3.1",
    [string]$CniPluginsVersion = "v1.6.2",
    [string]$PauseImage = "registry.k8s.io/pause:3.10",
    [string]$NssmUrl = "https://k8stestinfrabinaries.blob.core.windows.net/nssm-mirror/nssm-2.24.zip",
    [string]$KubeDir = "C:\k",
    [string]$JoinConfig = "",
    [int]$WaitSeconds = 600
)

$ErrorActionPreference = "Stop"
$ProgressPreference = "SilentlyContinue"
$script:Changed = $false

$CniBinDir = "C:\opt\cni\bin"
$CniConfDir = "C:\etc\cni\net.d"
$FlannelConfDir = "C:\etc\kube-flannel"
$DownloadDir = Join-Path $KubeDir "downloads"
$ContainerdDir = Join-Path $env:ProgramFiles "containerd"
$Nssm = Join-Path $KubeDir "nssm.exe"
if (-not $JoinConfig) { $JoinConfig = Join-Path $KubeDir "kubeadm-join.yaml" }
$KubeletConf = "C:\etc\kubernetes\kubelet.conf"

function Write-Step([string]$Message) {
    Write-Output "kinit: $Message"
}

function Set-Changed {
    $script:Changed = $true
}

# Download once; a file already in place is kept.
function Get-Download([string]$Url, [string]$Destination) {
    if (Test-Path $Destination) {
        return $false
    }
    New-Item -ItemType Directory -Force -Path (Split-Path $Destination) | Out-Null
    Write-Step "downloading $Url"
    $partial = "$Destination.partial"
    Invoke-WebRequest -UseBasicParsing -Uri $Url -OutFile $partial
    Move-Item -Force $partial $Destination
    Set-Changed
    return $true
}

function Wait-Until([scriptblock]$Condition, [string]$What) {
    $deadline = (Get-Date).AddSeconds($WaitSeconds)
    while (-not (& $Condition)) {
        if ((Get-Date) -gt $deadline) {
            throw "timed out after $WaitSeconds s waiting for $What"
        }
        Start-Sleep -Seconds 5
    }
}

# An nssm service with exactly these settings, running. Settings are rewritten (and the
# service restarted) only when they differ from what is registered.
function Set-NssmService([string]$Name, [string]$Program, [string[]]$Arguments, [string[]]$Environment, [string]$DependsOn) {
    $argumentLine = $Arguments -join " "
    $existing = Get-Service -Name $Name -ErrorAction SilentlyContinue
    if (-not $existing) {
        Write-Step "registering service $Name"
        & $Nssm install $Name $Program | Out-Null
        Set-Changed
    }
    $current = (& $Nssm get $Name AppParameters) -join " "
    $currentEnv = (& $Nssm get $Name AppEnvironmentExtra) -join " "
    $wantedEnv = $Environment -join " "
    if ($current.Trim() -ne $argumentLine.Trim() -or $currentEnv.Trim() -ne $wantedEnv.Trim() -or -not $existing) {
        & $Nssm set $Name Application $Program | Out-Null
        & $Nssm set $Name AppParameters $argumentLine | Out-Null
        if ($Environment.Count -gt 0) {
            & $Nssm set $Name AppEnvironmentExtra $Environment | Out-Null
        }
        if ($DependsOn) {
            & $Nssm set $Name DependOnService $DependsOn | Out-Null
        }
        & $Nssm set $Name AppDirectory $KubeDir | Out-Null
        & $Nssm set $Name AppStdout (Join-Path $KubeDir "logs\$Name.log") | Out-Null
        & $Nssm set $Name AppStderr (Join-Path $KubeDir "logs\$Name.log") | Out-Null
        & $Nssm set $Name AppRotateFiles 1 | Out-Null
        & $Nssm set $Name AppRotateBytes 10485760 | Out-Null
        & $Nssm set $Name Start SERVICE_AUTO_START | Out-Null
        if ($existing) {
            Restart-Service -Name $Name
        }
        Set-Changed
    }
    if ((Get-Service -Name $Name).Status -ne "Running") {
        Start-Service -Name $Name
        Set-Changed
    }
}

# 1. Prerequisites kinit handled before: the Containers feature and the shared configuration.
if ((Get-WindowsFeature -Name Containers).InstallState -ne "Installed") {
    throw "the Containers feature is not installed (kinit installs it and reboots before start.ps1)"
}
$netConfPath = Join-Path $FlannelConfDir "net-conf.json"
$netConf = Get-Content -Raw -Path $netConfPath | ConvertFrom-Json
$expectedBackend = @{ "l2bridge" = "host-gw"; "overlay" = "vxlan" }[$NetworkMode]
if ($netConf.Backend.Type -ne $expectedBackend) {
    throw "net-conf.json has backend '$($netConf.Backend.Type)' but -NetworkMode $NetworkMode needs '$expectedBackend'"
}
if ($netConf.Network -ne $ClusterCIDR) {
    throw "net-conf.json has network '$($netConf.Network)' but -ClusterCIDR is '$ClusterCIDR'"
}
if ($NetworkMode -eq "overlay") {
    # Windows overlay networking needs VNI 4096 and UDP 4789; flannel names the network after the VNI.
    if ($netConf.Backend.VNI -ne 4096 -or $netConf.Backend.Port -ne 4789) {
        throw "Windows overlay needs VNI 4096 and port 4789, net-conf.json has VNI $($netConf.Backend.VNI) port $($netConf.Backend.Port)"
    }
    $NetworkName = "flannel.$($netConf.Backend.VNI)"
} else {
    $NetworkName = "cbr0"
}
$cniConf = Get-Content -Raw -Path (Join-Path $CniConfDir "10-flannel.conf") | ConvertFrom-Json
if ($cniConf.name -ne $NetworkName) {
    throw "CNI configuration names network '$($cniConf.name)', flannel will create '$NetworkName'"
}
New-Item -ItemType Directory -Force -Path $DownloadDir, (Join-Path $KubeDir "logs"), $CniBinDir | Out-Null

# 2. containerd.
$containerdArchive = Join-Path $DownloadDir "containerd-$ContainerdVersion-windows-amd64.tar.gz"
$containerdUrl = "https://github.com/containerd/containerd/releases/download/v$ContainerdVersion/containerd-$ContainerdVersion-windows-amd64.tar.gz"
if (Get-Download $containerdUrl $containerdArchive) {
    New-Item -ItemType Directory -Force -Path $ContainerdDir | Out-Null
    tar.exe -xzf $containerdArchive -C $ContainerdDir --strip-components=1
    if ($LASTEXITCODE -ne 0) { throw "could not unpack $containerdArchive" }
}
$containerdExe = Join-Path $ContainerdDir "containerd.exe"
$containerdConfig = Join-Path $ContainerdDir "config.toml"
if (-not (Test-Path $containerdConfig)) {
    $config = (& $containerdExe config default) -join "`n"
    $config = $config -replace "(?m)^(\s*)sandbox(_image)? = .*$", "`$1sandbox`$2 = '$PauseImage'"
    $config = $config -replace "(?m)^(\s*)bin_dirs = .*$", "`$1bin_dirs = ['$($CniBinDir -replace '\\', '/')']"
    $config = $config -replace "(?m)^(\s*)bin_dir = .*$", "`$1bin_dir = '$($CniBinDir -replace '\\', '/')'"
    $config = $config -replace "(?m)^(\s*)conf_dir = .*$", "`$1conf_dir = '$($CniConfDir -replace '\\', '/')'"
    Set-Content -Path $containerdConfig -Value $config -Encoding ascii
    Set-Changed
}
if (-not (Get-Service -Name containerd -ErrorAction SilentlyContinue)) {
    & $containerdExe --register-service --config $containerdConfig
    if ($LASTEXITCODE -ne 0) { throw "could not register the containerd service" }
    Set-Changed
}
if ((Get-Service -Name containerd).Status -ne "Running") {
    Start-Service -Name containerd
    Set-Changed
}

# 3. Kubernetes binaries at the cluster's version (the same release as the Linux packages).
foreach ($binary in @("kubelet", "kubeadm", "kube-proxy", "kubectl")) {
    $target = Join-Path $KubeDir "$binary.exe"
    $versioned = Join-Path $DownloadDir "$binary-v$KubernetesVersion.exe"
    $url = "https://dl.k8s.io/v$KubernetesVersion/bin/windows/amd64/$binary.exe"
    if ((Get-Download $url $versioned) -or -not (Test-Path $target)) {
        Copy-Item -Force $versioned $target
        Set-Changed
    }
}

# 4. flanneld and the CNI plugins.
$flanneldExe = Join-Path $KubeDir "flanneld.exe"
$flanneldVersioned = Join-Path $DownloadDir "flanneld-$FlannelVersion.exe"
if ((Get-Download "https://github.com/flannel-io/flannel/releases/download/$FlannelVersion/flanneld.exe" $flanneldVersioned) -or -not (Test-Path $flanneldExe)) {
    Copy-Item -Force $flanneldVersioned $flanneldExe
    Set-Changed
}
$sdnArchive = Join-Path $DownloadDir "windows-container-networking-cni-amd64-$WindowsCniVersion.zip"
if (Get-Download "https://github.com/microsoft/windows-container-networking/releases/download/$WindowsCniVersion/windows-container-networking-cni-amd64-$WindowsCniVersion.zip" $sdnArchive) {
    Expand-Archive -Force -Path $sdnArchive -DestinationPath $CniBinDir
}
$flannelCniArchive = Join-Path $DownloadDir "cni-plugin-flannel-windows-amd64-$FlannelCniVersion.tgz"
if (Get-Download "https://github.com/flannel-io/cni-plugin/releases/download/$FlannelCniVersion/cni-plugin-flannel-windows-amd64-$FlannelCniVersion.tgz" $flannelCniArchive) {
    tar.exe -xzf $flannelCniArchive -C $CniBinDir
    if ($LASTEXITCODE -ne 0) { throw "could not unpack $flannelCniArchive" }
    Move-Item -Force (Join-Path $CniBinDir "flannel-amd64.exe") (Join-Path $CniBinDir "flannel.exe")
}
$cniPluginsArchive = Join-Path $DownloadDir "cni-plugins-windows-amd64-$CniPluginsVersion.tgz"
if (Get-Download "https://github.com/containernetworking/plugins/releases/download/$CniPluginsVersion/cni-plugins-windows-amd64-$CniPluginsVersion.tgz" $cniPluginsArchive) {
    tar.exe -xzf $cniPluginsArchive -C $CniBinDir
    if ($LASTEXITCODE -ne 0) { throw "could not unpack $cniPluginsArchive" }
}

# 5. nssm runs the node components as services.
$nssmArchive = Join-Path $DownloadDir "nssm-2.24.zip"
if ((Get-Download $NssmUrl $nssmArchive) -or -not (Test-Path $Nssm)) {
    Expand-Archive -Force -Path $nssmArchive -DestinationPath $DownloadDir
    Copy-Item -Force (Join-Path $DownloadDir "nssm-2.24\win64\nssm.exe") $Nssm
    Set-Changed
}

# 6. kubelet: a wrapper reads the flags `kubeadm join` writes (node IP, taints, pause image).
New-Item -ItemType Directory -Force -Path "C:\var\lib\kubelet", "C:\var\log\kubelet", "C:\etc\kubernetes\pki" | Out-Null
$startKubelet = Join-Path $KubeDir "StartKubelet.ps1"
$startKubeletText = @"
`$flags = ""
if (Test-Path C:\var\lib\kubelet\kubeadm-flags.env) {
    `$flags = ((Get-Content -Raw C:\var\lib\kubelet\kubeadm-flags.env) -replace '^KUBELET_KUBEADM_ARGS=', '').Trim().Trim('"')
}
`$arguments = @(
    "--cert-dir=C:\var\lib\kubelet\pki",
    "--config=C:\var\lib\kubelet\config.yaml",
    "--bootstrap-kubeconfig=C:\etc\kubernetes\bootstrap-kubelet.conf",
    "--kubeconfig=C:\etc\kubernetes\kubelet.conf",
    "--hostname-override=$NodeName",
    "--container-runtime-endpoint=npipe:////./pipe/containerd-containerd",
    "--enable-debugging-handlers",
    "--cgroups-per-qos=false",
    "--enforce-node-allocatable=```"```"",
    "--resolv-conf=```"```""
)
Invoke-Expression "$KubeDir\kubelet.exe `$(`$arguments -join ' ') `$flags"
"@
if (-not (Test-Path $startKubelet) -or (Get-Content -Raw $startKubelet) -ne $startKubeletText) {
    Set-Content -Path $startKubelet -Value $startKubeletText -NoNewline -Encoding ascii
    Set-Changed
}
$powershellExe = Join-Path $PSHOME "powershell.exe"
Set-NssmService -Name "kubelet" -Program $powershellExe `
    -Arguments @("-ExecutionPolicy", "Bypass", "-NoProfile", "-File", $startKubelet) `
    -Environment @() -DependsOn "containerd"

# 7. kubeadm join, once.
if (-not (Test-Path $KubeletConf)) {
    if (-not (Test-Path $JoinConfig)) {
        throw "the node has not joined and there is no join configuration at $JoinConfig"
    }
    Write-Step "kubeadm join as $NodeName"
    & (Join-Path $KubeDir "kubeadm.exe") join --config $JoinConfig
    if ($LASTEXITCODE -ne 0) { throw "kubeadm join failed with exit code $LASTEXITCODE" }
    Set-Changed
}
$kubectl = Join-Path $KubeDir "kubectl.exe"
Wait-Until { (& $kubectl --kubeconfig $KubeletConf get node $NodeName -o name 2>$null) -ne $null } "node $NodeName to register"

# 8. flanneld: takes this node's pod subnet from the API and creates the HNS network.
Set-NssmService -Name "flanneld" -Program $flanneldExe `
    -Arguments @("--kubeconfig-file=$(Join-Path $KubeDir 'flanneld.kubeconfig')", "--iface=$ManagementIP", "--ip-masq=1", "--kube-subnet-mgr=1", "--net-config-path=$netConfPath") `
    -Environment @("NODE_NAME=$NodeName") -DependsOn "kubelet"
Wait-Until { Get-HnsNetwork | Where-Object { $_.Name -eq $NetworkName } } "flanneld to create the HNS network $NetworkName"

# 9. kube-proxy on the flannel network.
$proxyArguments = @(
    "--hostname-override=$NodeName",
    "--kubeconfig=$(Join-Path $KubeDir 'kube-proxy.kubeconfig')",
    "--cluster-cidr=$ClusterCIDR",
    "--proxy-mode=kernelspace",
    "--network-name=$NetworkName",
    "--v=2"
)
if ($NetworkMode -eq "overlay") {
    # Overlay needs a source VIP from this node's pod subnet, allocated once by host-local.
    $sourceVipFile = Join-Path $KubeDir "sourceVip.txt"
    if (-not (Test-Path $sourceVipFile)) {
        $subnet = (Get-HnsNetwork | Where-Object { $_.Name -eq $NetworkName }).Subnets[0].AddressPrefix
        $ipam = @{
            cniVersion = "0.3.0"
            name       = $NetworkName
            ipam       = @{ type = "host-local"; ranges = @(, @(@{ subnet = $subnet })); dataDir = "C:\var\lib\cni\networks" }
        } | ConvertTo-Json -Depth 8
        $env:CNI_COMMAND = "ADD"
        $env:CNI_CONTAINERID = "kinit-source-vip"
        $env:CNI_NETNS = "none"
        $env:CNI_IFNAME = "none"
        $env:CNI_PATH = $CniBinDir
        $allocation = $ipam | & (Join-Path $CniBinDir "host-local.exe") | ConvertFrom-Json
        Set-Content -Path $sourceVipFile -Value ($allocation.ips[0].address -split "/")[0] -Encoding ascii
        Set-Changed
    }
    $sourceVip = (Get-Content -Raw $sourceVipFile).Trim()
    $proxyArguments += @("--source-vip=$sourceVip", "--enable-dsr=false")
}
Set-NssmService -Name "kube-proxy" -Program (Join-Path $KubeDir "kube-proxy.exe") `
    -Arguments $proxyArguments -Environment @("KUBE_NETWORK=$NetworkName") -DependsOn "flanneld"

Write-Step "node $NodeName joined: network $NetworkName ($NetworkMode), DNS $KubeDnsServiceIP, services $ServiceCIDR"
Write-Output "KINIT_CHANGED=$script:Changed"
